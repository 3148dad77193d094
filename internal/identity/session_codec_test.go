package identity

import (
	"reflect"
	"testing"
)

func TestSessionSerializer_RoundTripsTheCSRFSecretAndFlashes(t *testing.T) {
	in := map[any]any{"csrf": "s3cret", "_flash": []any{"Program created.", "Saved."}}
	b, err := SessionSerializer{}.Serialize(in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[any]any{}
	if err := (SessionSerializer{}).Deserialize(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip gave %#v, want %#v", out, in)
	}
	if _, err := (SessionSerializer{}).Serialize(map[any]any{1: "x"}); err == nil {
		t.Fatal("a non-string key was encoded, want an error")
	}
	if err := (SessionSerializer{}).Deserialize([]byte(`{"csrf":`), &out); err == nil {
		t.Fatal("a truncated cookie decoded, want an error")
	}
}

// rawSerializer keeps the decrypted plaintext of a cookie.
