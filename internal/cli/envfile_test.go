package cli

import (
	"slices"
	"strings"
	"testing"
)

// The vectors are systemd's own (its env-file tests), and the quoted values
// docs/DEPLOY.md recommends, which broke the `env $(… | xargs)` line.
func TestReadEnvFile_ReadsAsSystemdReadsEnvironmentFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []EnvVar
	}{
		{"later assignments, joined lines, escapes and blanks",
			"a=a\na=b\nb=b\\\nc\nd= d\\\ne  \\\nf  \ng=g\\ \nh= ąęół\\ śćńźżμ \ni=i\\\n",
			[]EnvVar{{"a", "a"}, {"a", "b"}, {"b", "bc"}, {"d", "de  f"}, {"g", "g "}, {"h", "ąęół śćńźżμ"}, {"i", "i"}}},
		{"a backslash at the end of the file", "a=a\\\n", []EnvVar{{"a", "a"}}},
		{"comments, and lines that assign nothing",
			"#SPAMD_ARGS=\"-d --socketpath=/var/lib/bulwark/spamd \\\n#--nouser-config                                     \\\nnormal1=line\\\n111\n;normal=ignored                                      \\\nnormal2=line222\nnormal ignored                                       \\\n",
			[]EnvVar{{"normal1", "line111"}, {"normal2", "line222"}}},
		{"double quotes keep blanks",
			"# Generated\n\nHWMON_MODULES=\"coretemp f71882fg\"\n\n# For compatibility reasons\n\nMODULE_0=coretemp\nMODULE_1=f71882fg\n",
			[]EnvVar{{"HWMON_MODULES", "coretemp f71882fg"}, {"MODULE_0", "coretemp"}, {"MODULE_1", "f71882fg"}}},
		{"empty values", "a=\nb=", []EnvVar{{"a", ""}, {"b", ""}}},
		{"the values docs/DEPLOY.md recommends",
			"ADMIT_OIDC_SCOPES=\"openid email offline_access\"\nADMIT_OIDC_PROVIDER_NAME='Example ID'\n  CLERK_ISSUER = https://clerk.example.org  \n",
			[]EnvVar{{"ADMIT_OIDC_SCOPES", "openid email offline_access"}, {"ADMIT_OIDC_PROVIDER_NAME", "Example ID"}, {"CLERK_ISSUER", "https://clerk.example.org"}}},
		{"escapes inside double quotes, none inside single quotes",
			"A=\"x \\\"y\\\" \\$HOME \\n\"\nB='a\\b \"c\"'\nC=\"one \\\ntwo\"\n",
			[]EnvVar{{"A", "x \"y\" $HOME \\n"}, {"B", "a\\b \"c\""}, {"C", "one two"}}},
		{"a value running across lines in quotes", "A=\"1\n2\"\nB=3\n", []EnvVar{{"A", "1\n2"}, {"B", "3"}}},
		{"names that are not variable names are skipped", "1A=x\nA-B=y\nOK_1=z\n", []EnvVar{{"OK_1", "z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadEnvFile(strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ReadEnvFile(%q)\n got %q\nwant %q", tc.file, got, tc.want)
			}
		})
	}
}
