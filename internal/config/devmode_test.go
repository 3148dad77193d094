package config

import (
	"strings"
	"testing"
)

func TestLoadConfig_DevModeOnlyAtAnHTTPLoopbackPublicURL(t *testing.T) {
	for _, tc := range []struct {
		public  string
		wantErr bool
	}{
		{"http://127.0.0.1:8080", false},
		{"http://127.0.0.2:8080", false},
		{"http://localhost:8080", false},
		{"http://localhost", false},
		{"http://[::1]:8080", false},
		{"https://admit.example.org", true},
		{"http://admit.example.org", true},
		{"https://127.0.0.1:8080", true},
		{"https://localhost", true},
		{"http://10.0.0.5:8080", true},
		{"http://admit.localhost:8080", true},
		{"http://[2001:db8::1]:8080", true},
	} {
		t.Run(tc.public, func(t *testing.T) {
			_, err := Load(fakeEnv(map[string]string{"ADMIT_PUBLIC_URL": tc.public}))
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("development mode with ADMIT_PUBLIC_URL=%s: err=%v, want error %v", tc.public, err, tc.wantErr)
			}
			if tc.wantErr {
				for _, want := range append([]string{"ADMIT_PUBLIC_URL"}, realSignInHint...) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %s", err, want)
					}
				}
			}
			// Clerk mode takes any public URL.
			if _, err := Load(fakeEnv(clerkEnv(map[string]string{"ADMIT_PUBLIC_URL": tc.public}))); err != nil {
				t.Errorf("Clerk mode with ADMIT_PUBLIC_URL=%s: %v", tc.public, err)
			}
		})
	}
}

func TestLoadConfig_DevModeRefusesAClientIPHeader(t *testing.T) {
	_, err := Load(fakeEnv(map[string]string{"ADMIT_CLIENT_IP_HEADER": "X-Real-IP"}))
	if err == nil {
		t.Fatal("development mode with ADMIT_CLIENT_IP_HEADER: no error")
	}
	for _, want := range append([]string{"ADMIT_CLIENT_IP_HEADER"}, realSignInHint...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := Load(fakeEnv(clerkEnv(map[string]string{"ADMIT_CLIENT_IP_HEADER": "X-Real-IP"}))); err != nil {
		t.Errorf("Clerk mode with ADMIT_CLIENT_IP_HEADER: %v", err)
	}
}

// realSignInHint is what every refused development setting must say: how
// to configure real sign-in instead.
var realSignInHint = []string{"CLERK_SECRET_KEY", "ADMIT_OIDC_ISSUER"}
