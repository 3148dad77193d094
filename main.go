// Command admit runs waitlists and controlled early access from one binary.
//
//	admit [serve]                                  run the server (default)
//	admit owner add|remove|list --workspace NAME [--user USER_ID]
//	admit migrate                                  apply database migrations and exit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"admit/handlers"
	"admit/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "admit:", err)
		os.Exit(1)
	}
}

// Run executes one admit command. It returns when the command is done or,
// for serve, after ctx is cancelled and the server has shut down.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, getenv, stdout, stderr)
	case "owner":
		return ownerCmd(ctx, args, getenv, stdout)
	case "migrate":
		return migrateCmd(ctx, getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

const usage = `usage:
  admit [serve]                                          run the server
  admit owner add    --workspace NAME --user USER_ID     make a user an owner (audited)
  admit owner remove --workspace NAME --user USER_ID     remove an owner (audited)
  admit owner list   --workspace NAME                    list a workspace's owners
  admit migrate                                          apply database migrations
`

// openDB loads the configuration and opens the database.
func openDB(ctx context.Context, getenv func(string) string) (*Config, *store.DB, error) {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("configuration:\n%w", err)
	}
	db, err := store.Open(ctx, cfg.DBPath())
	if err != nil {
		return nil, nil, err
	}
	return cfg, db, nil
}

func serve(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, db, err := openDB(ctx, getenv)
	if err != nil {
		return err
	}
	defer db.Close()
	keys, err := LoadKeys(getenv, cfg.DataDir)
	if err != nil {
		return err
	}
	db.BindingKey = keys.Binding

	var id handlers.Identity
	if cfg.DevMode() {
		id = handlers.NewDevIdentity(keys.SessionHash, keys.SessionBlock, cfg.PublicURL.Scheme == "https")
		owner, err := store.NormalizeEmail(cfg.DevOwnerEmail)
		if err != nil {
			return fmt.Errorf("ADMIT_DEV_OWNER_EMAIL: %w", err)
		}
		if seeded, err := db.SeedDemo(ctx, handlers.DevUserID(owner)); err != nil {
			return fmt.Errorf("seed demo: %w", err)
		} else if seeded {
			logger.Info("seeded the demo workspace, owner and program")
		}
	} else {
		id, err = handlers.NewClerkIdentity(handlers.ClerkConfig{
			SecretKey:         cfg.ClerkSecretKey,
			APIURL:            cfg.ClerkAPIURL,
			Issuer:            cfg.ClerkIssuer,
			AuthorizedParties: cfg.ClerkAuthorizedParties,
		})
		if err != nil {
			return err
		}
	}

	srv, err := handlers.New(handlers.Options{
		PublicURL:           cfg.PublicURL,
		ClientIPHeader:      cfg.ClientIPHeader,
		NetworkHourlyLimit:  cfg.NetworkHourlyLimit,
		ClerkPublishableKey: cfg.ClerkPublishableKey,
		Keys:                keys,
		Logger:              logger,
	}, db, id)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "listening on %s\n", base)
	if cfg.DevMode() {
		fmt.Fprintf(stdout, "development sign-in: %s/sign-in (the demo owner signs in as ADMIT_DEV_OWNER_EMAIL, default owner@example.test)\n", base)
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func ownerCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("owner: want add, remove or list\n" + usage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("owner "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workspace := fs.String("workspace", "", "workspace name")
	user := fs.String("user", "", "identity provider user ID")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("owner %s: %w\n%s", sub, err, usage)
	}
	if *workspace == "" {
		return fmt.Errorf("owner %s: --workspace is required", sub)
	}
	if sub != "list" && *user == "" {
		return fmt.Errorf("owner %s: --user is required", sub)
	}
	_, db, err := openDB(ctx, getenv)
	if err != nil {
		return err
	}
	defer db.Close()
	cli := store.Actor{Kind: store.ActorCLI}
	switch sub {
	case "add":
		if _, err := db.AddOwner(ctx, cli, *workspace, *user); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is an owner of %q\n", *user, *workspace)
	case "remove":
		if err := db.RemoveOwner(ctx, cli, *workspace, *user); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is no longer an owner of %q\n", *user, *workspace)
	case "list":
		owners, err := db.ListOwners(ctx, *workspace)
		if err != nil {
			return err
		}
		for _, o := range owners {
			status := "active"
			if !o.Active {
				status = "removed"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", o.UserID, status, o.UpdatedAt.Format(time.RFC3339))
		}
	default:
		return fmt.Errorf("owner: unknown subcommand %q\n%s", sub, usage)
	}
	return nil
}

func migrateCmd(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	_, db, err := openDB(ctx, getenv)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintln(stdout, "database is up to date")
	return nil
}
