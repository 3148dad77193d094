package identity

import "testing"

// The user ID is a digest of the issuer and the subject, fixed by these
// vectors (computed apart from admit: sha256 of "admit oidc user", NUL,
// issuer, NUL, subject; the first 20 bytes in hex): the same subject at
// another issuer is another person.
func TestOIDCUserID_KnownVectorsIncludeTheIssuer(t *testing.T) {
	for _, tc := range []struct{ issuer, sub, want string }{
		{"https://id.example.com/realms/admit", "248289761001", "oidc_cd4a30b213cda7278bcddf28fcc82848e74ba10c"},
		{"https://other.example.com", "248289761001", "oidc_0975503722aabb38c4869ea10ec4f9824795560e"},
	} {
		if got := OIDCUserID(tc.issuer, tc.sub); got != tc.want {
			t.Errorf("OIDCUserID(%q, %q)=%q, want %q", tc.issuer, tc.sub, got, tc.want)
		}
	}
}
