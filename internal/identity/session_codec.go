package identity

import (
	"encoding/json"
	"fmt"
)

// SessionSerializer encodes admit's session cookie (the CSRF secret and
// flash messages: string keys, string values) as JSON instead of
// securecookie's default gob. A gob decoder compiles the type description
// carried in every cookie, on every request: that was a tenth of the CPU of
// a signed-in HTML page (docs/PERFORMANCE.md#cookies-in-json). The cookie is still signed and
// encrypted by securecookie; only the plaintext's format changes.
type SessionSerializer struct{}

// Serialize implements securecookie.Serializer for session values.
func (SessionSerializer) Serialize(src any) ([]byte, error) {
	values, ok := src.(map[any]any)
	if !ok {
		return nil, fmt.Errorf("session: cannot encode %T", src)
	}
	m := make(map[string]any, len(values))
	for k, v := range values {
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("session: key of type %T is not a string", k)
		}
		m[key] = v
	}
	return json.Marshal(m)
}

// Deserialize implements securecookie.Serializer for session values.
func (SessionSerializer) Deserialize(src []byte, dst any) error {
	values, ok := dst.(*map[any]any)
	if !ok {
		return fmt.Errorf("session: cannot decode into %T", dst)
	}
	var m map[string]any
	if err := json.Unmarshal(src, &m); err != nil {
		return err
	}
	if *values == nil {
		*values = make(map[any]any, len(m))
	}
	for k, v := range m {
		(*values)[k] = v
	}
	return nil
}
