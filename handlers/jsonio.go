package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"admit/store"
)

// mediaType returns the request's media type, lowercased, without
// parameters. It is "" (so every caller answers 415) when the header does not
// parse or names a charset other than UTF-8: admit reads bodies as UTF-8 only
// and never decodes UTF-16 or Latin-1 bytes as if they were.
func mediaType(r *http.Request) string {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return ""
	}
	return strings.ToLower(mt)
}

// singleQuery parses a query string whose parameters are each given at most
// once: a malformed or repeated parameter is 400, never silently resolved
// to one of its values.
func singleQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("The query string could not be read.")
	}
	for _, vs := range q {
		if len(vs) > 1 {
			return nil, invalid("A query parameter is given more than once.")
		}
	}
	return q, nil
}

// pageLimit parses ?limit= (store.PageLimit): empty is the default page
// size (0).
func pageLimit(v string) (int, error) { return store.PageLimit(v) }

// readBody reads the (already size-limited) body; over the limit is 413.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errTooLarge
	}
	if err != nil {
		return nil, invalid("The request body could not be read.")
	}
	return b, nil
}

// decodeJSON decodes a JSON request body into v strictly: the content type
// must be application/json (else 415), the body at most 32 KiB (else 413),
// valid UTF-8 holding exactly one JSON value with no unknown and no
// duplicated fields (else 400).
func decodeJSON(r *http.Request, v any) error {
	if mediaType(r) != "application/json" {
		return errContentType
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeStrict(b, v)
}

// decodeStrict is decodeJSON's parser, separate so it can be fuzzed.
func decodeStrict(b []byte, v any) error {
	if !utf8.Valid(b) {
		return invalid("The request body is not valid UTF-8.")
	}
	// Every request body is a JSON object: null, arrays and scalars are not.
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return invalid("The request body must be a JSON object.")
	}
	if err := checkDuplicateKeys(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("The request body is not valid JSON for this request.")
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("The request body has data after the JSON value.")
	}
	return nil
}

// checkDuplicateKeys rejects an object that names a key twice. Go's decoder
// matches names case-insensitively, so "email" and "Email" are duplicates too.
//
// Well-formed JSON (nearly every body) is checked by one pass over its
// bytes that allocates only the keys: the walk by tokens below allocated
// for every token and cost more than decoding the body
// (docs/PERFORMANCE.md#cpu-per-signup). A malformed body takes the walk, which says so.
func checkDuplicateKeys(b []byte) error {
	if json.Valid(b) {
		if hasDuplicateKey(b) {
			return invalid("The request body names a field twice.")
		}
		return nil
	}
	return checkDuplicateKeysByTokens(b)
}

// hasDuplicateKey reports whether an object of b, which must be valid
// JSON, names a key twice, folded as encoding/json matches names.
func hasDuplicateKey(b []byte) bool {
	type level struct {
		object bool
		keys   []string
		set    map[string]bool // once keys outgrows a short scan
	}
	stack := make([]level, 0, 4)
	expectKey := false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, level{object: true})
			expectKey = true
		case '[':
			stack = append(stack, level{})
			expectKey = false
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = stack[len(stack)-1].object
		case '"':
			j, escaped := i+1, false
			for b[j] != '"' {
				if b[j] == '\\' {
					escaped = true
					j++
				}
				j++
			}
			if expectKey {
				k := foldKey(b[i:j+1], escaped)
				top := &stack[len(stack)-1]
				switch {
				case top.set != nil:
					if top.set[k] {
						return true
					}
					top.set[k] = true
				case slices.Contains(top.keys, k):
					return true
				case len(top.keys) < 16:
					top.keys = append(top.keys, k)
				default:
					top.set = make(map[string]bool, 2*len(top.keys))
					for _, o := range top.keys {
						top.set[o] = true
					}
					top.set[k] = true
				}
				expectKey = false
			}
			i = j
		}
	}
	return false
}

// foldKey is a quoted key (valid JSON) unescaped and folded as
// encoding/json matches names: "ſ" is "s", "K" is "k".
func foldKey(quoted []byte, escaped bool) string {
	raw := quoted[1 : len(quoted)-1]
	if !escaped {
		ascii := true
		for _, c := range raw {
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
		}
		if ascii {
			out := make([]byte, len(raw))
			for i, c := range raw {
				if 'a' <= c && c <= 'z' {
					c -= 'a' - 'A'
				}
				out[i] = c
			}
			return string(out)
		}
	}
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		k = string(raw) // not reached: the key is valid JSON
	}
	return strings.ToUpper(strings.ToLower(k))
}

// checkDuplicateKeysByTokens is checkDuplicateKeys for any input, by a
// walk of its tokens; a malformed body is invalid.
func checkDuplicateKeysByTokens(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool
	}
	var stack []*frame
	malformed := invalid("The request body is not valid JSON.")
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return malformed
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					stack[len(stack)-1].expectKey = stack[len(stack)-1].object
				}
				continue
			}
			k, ok := tok.(string)
			if !ok {
				return malformed
			}
			lk := strings.ToUpper(strings.ToLower(k)) // as encoding/json folds: "ſ" is "s", "K" is "k"
			if top.keys[lk] {
				return invalid("The request body names a field twice.")
			}
			top.keys[lk] = true
			top.expectKey = false
			continue
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, expectKey: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		}
		// a complete value was read: an enclosing object expects a key next
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expectKey = true
		}
	}
}

// parseForm parses a urlencoded form body: wrong type 415, too large 413.
func parseForm(r *http.Request) error {
	if mediaType(r) != "application/x-www-form-urlencoded" {
		return errContentType
	}
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errTooLarge
		}
		return invalid("The form could not be read.")
	}
	return nil
}

// formValue returns the single value of a form field; a repeated field is
// an error, so a value cannot be smuggled in a second copy.
func formValue(r *http.Request, name string) (string, error) {
	vs := r.PostForm[name]
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", invalid("The form repeats the field " + name + ".")
}
