package cli

import (
	"context"
	"fmt"
	"log/slog"

	"admit/internal/config"
	"admit/internal/identity"
	"admit/internal/serverkeys"
	"admit/store"
)

// newIdentity picks the identity provider: OpenID Connect, Clerk, or the
// development sign-in (which seeds the demo workspace on a fresh database).
func newIdentity(ctx context.Context, cfg *config.Config, keys serverkeys.Keys, db *store.DB, logger *slog.Logger) (identity.Identity, error) {
	if cfg.OIDCMode() {
		public := cfg.PublicURL.String()
		return identity.NewOIDCIdentity(identity.OIDCConfig{
			Issuer:        cfg.OIDC.Issuer,
			ClientID:      cfg.OIDC.ClientID,
			ClientSecret:  cfg.OIDC.ClientSecret,
			Scopes:        cfg.OIDC.Scopes,
			TrustEmail:    cfg.OIDC.TrustEmail,
			Name:          cfg.OIDC.ProviderName,
			RedirectURL:   public + "/auth/callback",
			PostLogoutURL: public + "/",
			DB:            db,
			TokenKey:      keys.SessionTokens,
			SecureCookie:  cfg.PublicURL.Scheme == "https",
		})
	}
	if !cfg.DevMode() {
		return identity.NewClerkIdentity(identity.ClerkConfig{
			SecretKey:         cfg.Clerk.SecretKey,
			APIURL:            cfg.Clerk.APIURL,
			Issuer:            cfg.Clerk.Issuer,
			AuthorizedParties: cfg.Clerk.AuthorizedParties,
			DB:                db,
		})
	}
	id, err := identity.NewDevIdentity(db, keys.SessionTokens, cfg.PublicURL.Scheme == "https")
	if err != nil {
		return nil, err
	}
	owner, err := store.NormalizeEmail(cfg.DevOwnerEmail)
	if err != nil {
		return nil, fmt.Errorf("ADMIT_DEV_OWNER_EMAIL: %w", err)
	}
	if seeded, err := db.SeedDemo(ctx, identity.DevUserID(owner)); err != nil {
		return nil, fmt.Errorf("seed demo: %w", err)
	} else if seeded {
		logger.Info("seeded the demo workspace, owner and program")
	}
	return id, nil
}
