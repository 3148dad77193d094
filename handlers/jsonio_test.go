package handlers

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"admit/internal/identity"
	"admit/store"
)

// strictBody is a request body shaped like admit's: scalars, a nested
// object and an array of objects.
type strictBody struct {
	RequestKey string `json:"requestKey"`
	Email      string `json:"email"`
	N          int    `json:"n"`
	Permission bool   `json:"permission"`
	Nested     struct {
		A int `json:"a"`
	} `json:"nested"`
	List []struct {
		B int `json:"b"`
	} `json:"list"`
}

func TestDecodeStrict_AcceptsOneWellFormedObject(t *testing.T) {
	full := strictBody{RequestKey: "k1", Email: "a@example.com", N: 3, Permission: true}
	full.Nested.A = 7
	full.List = []struct {
		B int `json:"b"`
	}{{1}, {2}}

	for _, tc := range []struct {
		name string
		in   string
		want strictBody
	}{
		{"empty object", `{}`, strictBody{}},
		{"surrounding whitespace", " \n\t{}\r\n ", strictBody{}},
		{"scalars", `{"requestKey":"k1","email":"a@example.com","n":3,"permission":true}`,
			strictBody{RequestKey: "k1", Email: "a@example.com", N: 3, Permission: true}},
		{"nested object and array of objects with the same key in each element",
			`{"requestKey":"k1","email":"a@example.com","n":3,"permission":true,"nested":{"a":7},"list":[{"b":1},{"b":2}]}`, full},
		{"a key reused at another level", `{"nested":{"a":1},"list":[{"b":1}],"n":2}`, func() strictBody {
			v := strictBody{N: 2}
			v.Nested.A = 1
			v.List = []struct {
				B int `json:"b"`
			}{{1}}
			return v
		}()},
		{"empty array", `{"list":[]}`, strictBody{List: []struct {
			B int `json:"b"`
		}{}}},
		{"null field", `{"nested":null,"list":null}`, strictBody{}},
		{"escaped characters in a value", `{"email":"a\u0040example.com"}`, strictBody{Email: "a@example.com"}},
		{"non-ASCII value", `{"requestKey":"clé ✓"}`, strictBody{RequestKey: "clé ✓"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got strictBody
			if err := decodeStrict([]byte(tc.in), &got); err != nil {
				t.Fatalf("decodeStrict(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decodeStrict(%s)=%+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeStrict_RejectsAsInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"unknown field", `{"email":"a@example.com","admin":true}`},
		{"unknown nested field", `{"nested":{"a":1,"z":2}}`},
		{"unknown field in an array element", `{"list":[{"b":1},{"c":2}]}`},
		{"duplicate field", `{"email":"a@example.com","email":"b@example.com"}`},
		{"duplicate differing in case", `{"email":"a@example.com","Email":"b@example.com"}`},
		{"duplicate through an escape", `{"email":"a@example.com","\u0065mail":"b@example.com"}`},
		// encoding/json matches names with Unicode case folding: U+212A
		// KELVIN SIGN is "k" and U+017F LATIN SMALL LETTER LONG S is "s".
		{"duplicate through the Kelvin sign", `{"requestKey":"a","request` + "\u212a" + `ey":"b"}`},
		{"duplicate through the long s", `{"permission":true,"permi` + "\u017f\u017f" + `ion":false}`},
		{"duplicate in a nested object", `{"nested":{"a":1,"a":2}}`},
		{"duplicate in an array element", `{"list":[{"b":1,"b":2}]}`},
		{"duplicate after a nested value", `{"nested":{"a":1},"n":1,"nested":{"a":2}}`},
		{"two objects", `{} {}`},
		{"two values", `{"n":1}{"n":2}`},
		{"trailing garbage", `{}x`},
		{"trailing bracket", `{}]`},
		{"trailing number", `{} 1`},
		{"invalid UTF-8 in a value", "{\"email\":\"\xff\"}"},
		{"invalid UTF-8 in a key", "{\"\xc3\x28\":1}"},
		{"invalid UTF-8 outside a string", "{}\xff"},
		{"truncated", `{"n":1`},
		{"missing value", `{"n":}`},
		{"trailing comma", `{"n":1,}`},
		{"missing colon", `{"n" 1}`},
		{"single quotes", `{'n':1}`},
		{"bare key", `{n:1}`},
		{"comment", `{"n":1 /* c */}`},
		{"string for int", `{"n":"1"}`},
		{"float for int", `{"n":1.5}`},
		{"string for bool", `{"permission":"true"}`},
		{"number for string", `{"email":5}`},
		{"object for array", `{"list":{}}`},
		{"array at top level", `[]`},
		{"string at top level", `"x"`},
		{"empty body", ``},
		{"whitespace only", " \n "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v strictBody
			err := decodeStrict([]byte(tc.in), &v)
			if err == nil {
				t.Fatalf("decodeStrict(%q) accepted it as %+v", tc.in, v)
			}
			if got, want := store.ErrorCode(err), store.EINVALID; got != want {
				t.Fatalf("decodeStrict(%q): code=%q, want %q (%v)", tc.in, got, want, err)
			}
			if status, _, _ := classify(err); status != http.StatusBadRequest {
				t.Fatalf("decodeStrict(%q): status=%d, want 400", tc.in, status)
			}
		})
	}
}

// jsonRequest is a POST with the given content type and body, its body
// limited as the security middleware limits it.
func jsonRequest(contentType string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/public/removals", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, maxBody)
	return r
}

// TestCheckDuplicateKeys_OnePassAgreesWithTheWalk: objects of every size
// (past the short scan of 16 keys), nested and in arrays, escaped and
// folded keys, each with and without a repeat.
func TestCheckDuplicateKeys_OnePassAgreesWithTheWalk(t *testing.T) {
	object := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"k%d":[{"k%d":"}\"{"}],`, i, i)
		}
		b.WriteString(extra + `"last":1}`)
		return b.String()
	}
	for _, tc := range []struct {
		in  string
		dup bool
	}{
		{`{}`, false},
		{`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`, false},
		{`{"a":"\"a\":1,","b":"{"}`, false},
		{`{"\u0061":1,"a":2}`, true},
		{`{"A":1,"a":2}`, true},
		{`{"x":[{"q":1,"Q":2}]}`, true},
		{object(3, ""), false},
		{object(3, `"K1":0,`), true},
		{object(16, ""), false},
		{object(16, `"k15":0,`), true},
		{object(17, ""), false},
		{object(17, `"K16":0,`), true},
		{object(500, ""), false},
		{object(500, `"k0":0,`), true},
		{object(500, `"LAST":0,`), true},
	} {
		if !json.Valid([]byte(tc.in)) {
			t.Fatalf("%s is not valid JSON", tc.in)
		}
		fast, walk := checkDuplicateKeys([]byte(tc.in)), checkDuplicateKeysByTokens([]byte(tc.in))
		if (fast != nil) != tc.dup || (walk != nil) != tc.dup {
			t.Errorf("%.80s: one pass %v, walk %v; want a duplicate: %v", tc.in, fast, walk, tc.dup)
		}
	}
}

func TestDecodeJSON_RequiresJSONContentType(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		ok          bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON; Charset=UTF-8", true},
		{"", false},
		{"text/plain", false},
		{"text/json", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"application/json-patch+json", false},
		{"application/jsonx", false},
		{"application/json; charset", false}, // unparseable parameters
		{"application/json; charset=utf-16", false},
		{"application/json; charset=ISO-8859-1", false},
		{"application/json; charset=\"\"", false},
		{"application/json; charset=\"utf-8\"", true},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			var v strictBody
			err := decodeJSON(jsonRequest(tc.contentType, []byte(`{"n":1}`)), &v)
			if tc.ok {
				if err != nil {
					t.Fatalf("Content-Type %q: %v", tc.contentType, err)
				}
				if got, want := v.N, 1; got != want {
					t.Fatalf("n=%d, want %d", got, want)
				}
				return
			}
			if !errors.Is(err, errContentType) {
				t.Fatalf("Content-Type %q: err=%v, want errContentType", tc.contentType, err)
			}
			if status, code, _ := classify(err); status != http.StatusUnsupportedMediaType || code != "unsupported_media_type" {
				t.Fatalf("Content-Type %q: classify=%d %q, want 415 unsupported_media_type", tc.contentType, status, code)
			}
		})
	}
}

// bodyOfSize returns a valid JSON body of exactly n bytes.
func bodyOfSize(tb testing.TB, n int) []byte {
	tb.Helper()
	b := []byte(`{"email":"` + strings.Repeat("a", n-len(`{"email":""}`)) + `"}`)
	if len(b) != n {
		tb.Fatalf("body has %d bytes, want %d", len(b), n)
	}
	return b
}

func TestDecodeJSON_BodyLimitIs32KiB(t *testing.T) {
	var v strictBody
	if err := decodeJSON(jsonRequest("application/json", bodyOfSize(t, maxBody)), &v); err != nil {
		t.Fatalf("a body of exactly %d bytes: %v", maxBody, err)
	}
	if got, want := len(v.Email), maxBody-len(`{"email":""}`); got != want {
		t.Fatalf("decoded email has %d bytes, want %d", got, want)
	}

	for _, n := range []int{maxBody + 1, 4 * maxBody} {
		err := decodeJSON(jsonRequest("application/json", bodyOfSize(t, n)), &v)
		if !errors.Is(err, errTooLarge) {
			t.Fatalf("a body of %d bytes: err=%v, want errTooLarge", n, err)
		}
		if status, code, _ := classify(err); status != http.StatusRequestEntityTooLarge || code != "payload_too_large" {
			t.Fatalf("a body of %d bytes: classify=%d %q, want 413 payload_too_large", n, status, code)
		}
	}
}

// failingReader fails every read with an error that is not a size limit.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestDecodeJSON_UnreadableBodyIsInvalid(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(failingReader{}))
	r.Header.Set("Content-Type", "application/json")
	var v strictBody
	err := decodeJSON(r, &v)
	if got, want := store.ErrorCode(err), store.EINVALID; got != want {
		t.Fatalf("code=%q, want %q (%v)", got, want, err)
	}
}

// mustConstraintError returns the error SQLite gives a second row with the
// same unique key.
func mustConstraintError(tb testing.TB) error {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(tb.TempDir(), "unique.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE entries (email_key TEXT UNIQUE)`); err != nil {
		tb.Fatal(err)
	}
	insert := `INSERT INTO entries (email_key) VALUES ('a@example.test')`
	if _, err := db.Exec(insert); err != nil {
		tb.Fatal(err)
	}
	_, err = db.Exec(insert)
	if err == nil {
		tb.Fatal("a duplicate unique key was accepted")
	}
	return err
}

func TestClassify_MapsEveryErrorToOneStatusAndCode(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		status      int
		code        string
		message     string // "" means any
		mustNotShow string // a detail the message must not reveal
	}{
		{"too large", errTooLarge, 413, "payload_too_large", "", ""},
		{"wrapped too large", fmt.Errorf("read: %w", errTooLarge), 413, "payload_too_large", "", ""},
		{"slow body", errSlowBody, 408, "request_timeout", errSlowBody.message, ""},
		{"content type", errContentType, 415, "unsupported_media_type", "", ""},
		{"cross origin", errCrossOrigin, 403, "forbidden", "", ""},
		{"csrf", errCSRF, 403, "forbidden", "", ""},
		{"not found", errNotFound, 404, "not_found", errNotFound.message, ""},
		{"method", errMethod, 405, "method_not_allowed", "", ""},
		{"signed out API", errSignedOutAPI, 401, "unauthorized", "", ""},
		{"signed out", identity.ErrSignedOut, 401, "unauthorized", fixedMessages[401], ""},
		{"wrapped signed out", fmt.Errorf("auth: %w", identity.ErrSignedOut), 401, "unauthorized", fixedMessages[401], ""},
		{"identity unavailable", identity.ErrIdentityUnavailable, 503, store.EUNAVAILABLE, fixedMessages[503], ""},
		{"invalid", invalid("Enter an email address."), 400, store.EINVALID, "Enter an email address.", ""},
		{"store not found", store.Errorf(store.ENOTFOUND, "No workspace is named %q.", "Secret"), 404, store.ENOTFOUND,
			errNotFound.message, "Secret"},
		{"store conflict", store.Errorf(store.ECONFLICT, "The program changed."), 409, store.ECONFLICT, "The program changed.", ""},
		{"wrapped store conflict", fmt.Errorf("select: %w", store.Errorf(store.ECONFLICT, "x")), 409, store.ECONFLICT, "x", ""},
		{"rate limited", store.Errorf(store.ERATELIMITED, "queue full at 1000"), 429, store.ERATELIMITED, fixedMessages[429], "1000"},
		{"forbidden", store.Errorf(store.EFORBIDDEN, "Access is off."), 403, store.EFORBIDDEN, "Access is off.", ""},
		{"unavailable", store.Errorf(store.EUNAVAILABLE, "down"), 503, store.EUNAVAILABLE, fixedMessages[503], ""},
		{"store internal", store.Errorf(store.EINTERNAL, "boom"), 500, store.EINTERNAL, fixedMessages[500], ""},
		{"unexpected error", errors.New("sqlite: disk I/O error at /srv/admit/admit.db"), 500, store.EINTERNAL,
			fixedMessages[500], "sqlite"},
		{"constraint failure", mustConstraintError(t), 409, store.ECONFLICT, "", "email_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code, message := classify(tc.err)
			if got, want := status, tc.status; got != want {
				t.Errorf("status=%d, want %d", got, want)
			}
			if got, want := code, tc.code; got != want {
				t.Errorf("code=%q, want %q", got, want)
			}
			if tc.message != "" && message != tc.message {
				t.Errorf("message=%q, want %q", message, tc.message)
			}
			if message == "" && status != http.StatusUnauthorized {
				t.Errorf("empty message for status %d", status)
			}
			if tc.mustNotShow != "" && strings.Contains(message, tc.mustNotShow) {
				t.Errorf("message %q reveals %q", message, tc.mustNotShow)
			}
		})
	}
}

// foldDuplicate walks one JSON value and reports an object key that
// encoding/json would match to the same field as an earlier key of the same
// object (its rule is bytes.EqualFold). It is an oracle independent of
// checkDuplicateKeys.
func foldDuplicate(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	var keys []string
	for dec.More() {
		if d == '{' {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k := kt.(string)
			for _, prev := range keys {
				if bytes.EqualFold([]byte(prev), []byte(k)) {
					return k, nil
				}
			}
			keys = append(keys, k)
		}
		if dup, err := foldDuplicate(dec); dup != "" || err != nil {
			return dup, err
		}
	}
	_, err = dec.Token() // the closing delimiter
	return "", err
}

func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"requestKey":"k1","email":"a@example.com","n":3,"permission":true}`,
		`{"nested":{"a":1},"list":[{"b":1},{"b":2}]}`,
		`{"email":"a","Email":"b"}`,
		`{"email":"a","\u0065mail":"b"}`,
		`{"permission":true,"permi` + "\u017f\u017f" + `ion":false}`,
		`{"requestKey":"a","request` + "\u212a" + `ey":"b"}`,
		`{"list":[{"b":1,"b":2}]}`,
		`{"nested":{"a":1,"z":2}}`,
		`{} {}`,
		`{}x`,
		"{\"email\":\"\xff\"}",
		`[[[[{"a":[{}]}]]]]`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The one-pass check agrees with the walk by tokens.
		if fast, walk := checkDuplicateKeys(b), checkDuplicateKeysByTokens(b); (fast == nil) != (walk == nil) {
			t.Fatalf("%q: the one-pass check says %v, the walk %v", b, fast, walk)
		}
		var got strictBody
		err := decodeStrict(b, &got)
		if err != nil {
			if code := store.ErrorCode(err); code != store.EINVALID {
				t.Fatalf("rejected with code %q, want %q: %v", code, store.EINVALID, err)
			}
			return
		}
		if !utf8.Valid(b) {
			t.Fatalf("accepted invalid UTF-8 %q", b)
		}

		// The standard decoder agrees, and reads the same value.
		var std strictBody
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("accepted %q, but encoding/json says %v", b, err)
		}
		if !reflect.DeepEqual(got, std) {
			t.Fatalf("decoded %+v, encoding/json %+v", got, std)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("accepted %q with data after the value", b)
		}

		// No two keys of one object name the same field.
		if dup, err := foldDuplicate(json.NewDecoder(bytes.NewReader(b))); err != nil || dup != "" {
			t.Fatalf("accepted %q, which repeats the field %q (walk error %v)", b, dup, err)
		}

		// What we would write back is accepted too, with the same value.
		out, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkDuplicateKeys(out); err != nil {
			t.Fatalf("re-marshaled %s: %v", out, err)
		}
		var again strictBody
		if err := decodeStrict(out, &again); err != nil {
			t.Fatalf("re-marshaled %s rejected: %v", out, err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip %+v, want %+v", again, got)
		}
	})
}
