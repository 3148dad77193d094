package store

import (
	"strings"
	"testing"
)

// emailOf builds local + "@" + domain; for length cases.
func emailOf(local, domain string) string { return local + "@" + domain }

// domainOfLength returns a valid domain of exactly n bytes (n >= 5) made of
// labels of at most 63 bytes.
func domainOfLength(n int) string {
	var labels []string
	for n > 0 {
		l := min(63, n)
		if rest := n - l; rest > 0 && rest < 2 {
			l-- // leave room for a dot and a one-byte label
		}
		labels = append(labels, strings.Repeat("d", l))
		n -= l
		if n > 0 {
			n-- // the dot
		}
	}
	return strings.Join(labels, ".")
}

func TestNormalizeEmail_Grammar(t *testing.T) {
	local64 := strings.Repeat("l", 64)
	// 64 + 1 + 189 = 254 bytes: the longest address accepted.
	longest := emailOf(local64, domainOfLength(189))
	if len(longest) != 254 {
		t.Fatalf("test setup: longest address is %d bytes", len(longest))
	}
	for _, tc := range []struct {
		name, in, want string // want "" means rejected
	}{
		// Accepted, and how they are normalized.
		{"plain", "a@example.com", "a@example.com"},
		{"shortest with a dot", "a@b.c", "a@b.c"},
		{"surrounding ASCII spaces trimmed", "   jane@example.com  ", "jane@example.com"},
		{"local part case preserved", "Jane.DOE@example.com", "Jane.DOE@example.com"},
		{"domain lowercased", "jane@Mail.EXAMPLE.Com", "jane@mail.example.com"},
		{"local kept, domain folded together", "  MiXeD.Case+Tag@ExAmPlE.ORG ", "MiXeD.Case+Tag@example.org"},
		{"no plus or dot folding", "first.last+news@example.com", "first.last+news@example.com"},
		{"every allowed local symbol", "a!#$%&'*+/=?^_`{|}~-z@example.com", "a!#$%&'*+/=?^_`{|}~-z@example.com"},
		{"digits and inner hyphen in domain", "x@mail-1.example9.com", "x@mail-1.example9.com"},
		{"local part of 64 bytes", emailOf(local64, "example.com"), emailOf(local64, "example.com")},
		{"label of 63 bytes", emailOf("a", strings.Repeat("b", 63)+".com"), emailOf("a", strings.Repeat("b", 63)+".com")},
		{"254 bytes", longest, longest},
		{"254 bytes after trimming spaces", "  " + longest + " ", longest},

		// Whitespace other than surrounding ASCII spaces.
		{"leading tab not trimmed", "\ta@example.com", ""},
		{"trailing tab not trimmed", "a@example.com\t", ""},
		{"trailing newline", "a@example.com\n", ""},
		{"trailing carriage return", "a@example.com\r", ""},
		{"no-break space around", "\u00a0a@example.com", ""},
		{"internal space in local", "a b@example.com", ""},
		{"internal space in domain", "a@exa mple.com", ""},
		{"space before @", "a @example.com", ""},
		{"internal tab", "a\tb@example.com", ""},

		// Control and non-ASCII bytes.
		{"NUL", "a\x00b@example.com", ""},
		{"escape", "a\x1bb@example.com", ""},
		{"DEL", "a\x7f@example.com", ""},
		{"control in domain", "a@exam\x01ple.com", ""},
		{"non-ASCII local", "jos\u00e9@example.com", ""},
		{"non-ASCII domain", "a@ex\u00e4mple.com", ""},
		{"fullwidth at sign", "a\uff20example.com", ""},
		{"invalid UTF-8", "a\xff@example.com", ""},

		// Length.
		{"empty", "", ""},
		{"only spaces", "     ", ""},
		{"two bytes", "a@", ""},
		{"255 bytes", emailOf(local64, domainOfLength(190)), ""},
		{"local part of 65 bytes", emailOf(strings.Repeat("l", 65), "example.com"), ""},

		// The @.
		{"no @", "example.com", ""},
		{"two @", "a@b@example.com", ""},
		{"quoted @ in local", `"a@b"@example.com`, ""},
		{"empty local", "@example.com", ""},
		{"empty domain", "a@", ""},

		// Dots in the local part.
		{"leading dot in local", ".a@example.com", ""},
		{"trailing dot in local", "a.@example.com", ""},
		{"consecutive dots in local", "a..b@example.com", ""},
		{"only a dot", ".@example.com", ""},

		// Characters outside the local class.
		{"quote", `a"b@example.com`, ""},
		{"parenthesis comment", "a(b)@example.com", ""},
		{"comma", "a,b@example.com", ""},
		{"colon", "a:b@example.com", ""},
		{"semicolon", "a;b@example.com", ""},
		{"angle bracket", "<a@example.com>", ""},
		{"square bracket", "a[b@example.com", ""},
		{"backslash", `a\b@example.com`, ""},

		// The domain.
		{"domain without a dot", "a@localhost", ""},
		{"label of 64 bytes", emailOf("a", strings.Repeat("b", 64)+".com"), ""},
		{"leading hyphen in label", "a@-example.com", ""},
		{"trailing hyphen in label", "a@example-.com", ""},
		{"hyphen edge in last label", "a@example.-com", ""},
		{"domain longer than 253 bytes", emailOf("a", domainOfLength(254)), ""},
		{"empty label in the middle", "a@example..com", ""},
		{"leading dot in domain", "a@.example.com", ""},
		{"trailing dot in domain", "a@example.com.", ""},
		{"underscore in domain", "a@ex_ample.com", ""},
		{"IP literal", "a@[127.0.0.1]", ""},
		{"plus in domain", "a@ex+ample.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeEmail(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("NormalizeEmail(%q)=%q, want an error", tc.in, got)
				}
				if got, want := ErrorCode(err), EINVALID; got != want {
					t.Fatalf("NormalizeEmail(%q) code=%q, want %q", tc.in, got, want)
				}
				if got != "" {
					t.Fatalf("NormalizeEmail(%q) returned %q with its error, want empty", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeEmail(%q): %v, want %q", tc.in, err, tc.want)
			}
			if got != tc.want {
				t.Fatalf("NormalizeEmail(%q)=%q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestNormalizeEmail_ErrorMessageHoldsNoAddress checks the message a person
// sees (and a log could hold) never echoes the input.
func TestNormalizeEmail_ErrorMessageHoldsNoAddress(t *testing.T) {
	_, err := NormalizeEmail("secret.person@exa mple.com")
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), "secret.person") || strings.Contains(ErrorMessage(err), "secret.person") {
		t.Fatalf("error %q echoes the address", err)
	}
}

// FuzzNormalizeEmail checks the grammar's invariants on arbitrary input: it
// never panics, and an accepted address is ASCII, 3–254 bytes, has exactly
// one @, keeps the trimmed local part exactly, has a lowercase domain, and
// normalizes to itself.
func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{
		"a@example.com", " Jane.Doe@Example.COM ", "a..b@example.com", "a@b@c.d", "\ta@b.co",
		"x@-y.com", "a@ex_ample.com", "jos\u00e9@example.com", "a!#$%&'*+/=?^_`{|}~-z@example.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeEmail(in)
		if err != nil {
			if got, want := ErrorCode(err), EINVALID; got != want {
				t.Fatalf("NormalizeEmail(%q) code=%q, want %q", in, got, want)
			}
			if out != "" {
				t.Fatalf("NormalizeEmail(%q) returned %q with an error", in, out)
			}
			return
		}
		if n := len(out); n < 3 || n > 254 {
			t.Fatalf("NormalizeEmail(%q)=%q is %d bytes, want 3–254", in, out, n)
		}
		for i := 0; i < len(out); i++ {
			if c := out[i]; c <= ' ' || c >= 0x7f {
				t.Fatalf("NormalizeEmail(%q)=%q has byte %#x, want printable ASCII only", in, out, c)
			}
		}
		if got := strings.Count(out, "@"); got != 1 {
			t.Fatalf("NormalizeEmail(%q)=%q has %d @, want exactly 1", in, out, got)
		}
		again, err := NormalizeEmail(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeEmail(%q)=%q, but NormalizeEmail of that is (%q, %v): not idempotent", in, out, again, err)
		}
		trimmed := strings.Trim(in, " ")
		at := strings.IndexByte(out, '@')
		local, domain := out[:at], out[at+1:]
		if !strings.HasPrefix(trimmed, local+"@") {
			t.Fatalf("NormalizeEmail(%q)=%q changed the local part", in, out)
		}
		if domain != strings.ToLower(domain) || !strings.EqualFold(trimmed[at+1:], domain) {
			t.Fatalf("NormalizeEmail(%q)=%q: domain is not the input's, lowercased", in, out)
		}
	})
}
