package store

import (
	"strings"
	"testing"
	"time"
)

// TestInputChecks_RefuseWithTheirMessageAndAcceptGoodValues covers the
// checks forms and JSON routes run before an operation: each refuses bad
// input as EINVALID with a message naming the fix, and passes a good value.
func TestInputChecks_RefuseWithTheirMessageAndAcceptGoodValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" means the check must pass
	}{
		{"whole number", second(WholeNumber(" 12 ", "queue cap")), ""},
		{"not a whole number", second(WholeNumber("lots", "queue cap")), "The queue cap must be a whole number."},
		{"form revision", second(FormRevision("7")), ""},
		{"no form revision", second(FormRevision("")), "missing its revision"},
		{"revision given", second(RequireRevision(new(int64), "")), ""},
		{"revision missing", second(RequireRevision(nil, "")), "expectedRevision is required."},
		{"revision missing with hint", second(RequireRevision(nil, "0 when new")), "expectedRevision is required (0 when new)."},
		{"expiry", second(ExpiryFromForm("2030-01-02", "10:30")), ""},
		{"expiry without a day", second(ExpiryFromForm("", "10:30")), "Choose the day the code expires."},
		{"expiry without a time", second(ExpiryFromForm("2030-01-02", "")), "missing its time of day"},
		{"instant", second(ExpiryInstant("2030-01-02T10:30:00Z")), ""},
		{"not an instant", second(ExpiryInstant("tomorrow")), "RFC 3339"},
		{"bound", second(TimeBound("2030-01-02", false)), ""},
		{"not a bound", second(TimeBound("soon", false)), "A time bound is a date"},
		{"confirmation", CheckRetireConfirmation(" app ", "app"), ""},
		{"wrong confirmation", CheckRetireConfirmation("other", "app"), "Type the program's address name"},
		{"asset type", CheckAssetType("image/png"), ""},
		{"not an asset type", CheckAssetType("text/html"), "Upload a PNG"},
		{"code shape", CheckCodeShape(strings.Repeat("A", 43)), ""},
		{"not a code", CheckCodeShape("short"), "exactly 43 characters"},
		{"token", CheckRemovalToken(strings.Repeat("a1", 32)), ""},
		{"not a token", CheckRemovalToken(strings.Repeat("A1", 32)), "64 characters"},
		{"empty honeypot", CheckHoneypot(""), ""},
		{"filled honeypot", CheckHoneypot("x"), "could not be accepted"},
		{"request key", second(checkRequestKey("0b6f1e2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")), ""},
		{"no request key", second(checkRequestKey("nope")), "missing its request key"},
		{"notice version", checkNoticeVersion(1), ""},
		{"no notice version", checkNoticeVersion(0), "missing its notice version"},
		{"permission", checkPermission(true), ""},
		{"no permission", checkPermission(false), "Tick the box"},
		{"page limit", second(PageLimit("200")), ""},
		{"page limit too big", second(PageLimit("201")), "from 1 to 200"},
		{"upload", CheckUploadChosen(1), ""},
		{"no upload", CheckUploadChosen(0), "Choose a file to upload."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("err=%v, want none", tc.err)
				}
				return
			}
			if got := ErrorCode(tc.err); got != EINVALID {
				t.Fatalf("code=%q, want %q (err=%v)", got, EINVALID, tc.err)
			}
			if msg := ErrorMessage(tc.err); !strings.Contains(msg, tc.want) {
				t.Fatalf("message=%q, want it to contain %q", msg, tc.want)
			}
		})
	}
}

// TestExpiryFromForm_IsTheSameInstantForTheSameForm: a form sent twice
// binds to the same request, so its instant must not drift.
func TestExpiryFromForm_IsTheSameInstantForTheSameForm(t *testing.T) {
	a, err := ExpiryFromForm("2030-01-02", "10:30")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ExpiryFromForm(" 2030-01-02 ", "10:30 ")
	if want := time.Date(2030, 1, 2, 10, 30, 0, 0, time.UTC); !a.Equal(want) || !b.Equal(want) {
		t.Fatalf("got %v and %v, want %v", a, b, want)
	}
}

func second[T any](_ T, err error) error { return err }
