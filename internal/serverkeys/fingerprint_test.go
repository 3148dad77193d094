package serverkeys

import (
	"bytes"
	"testing"
)

func TestFingerprint_ChangesWithEachSharedKeyAndNotWithARotation(t *testing.T) {
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	base := Keys{SessionHash: key(1), SessionBlock: key(2), CSRF: key(3), Binding: key(4), Counter: key(5), SessionTokens: key(6)}
	fp := base.Fingerprint()
	if len(fp) != 32 {
		t.Fatalf("fingerprint of %d bytes, want 32", len(fp))
	}
	for name, k := range map[string][]byte{"binding": base.Binding, "counter": base.Counter, "session_tokens": base.SessionTokens} {
		if bytes.Contains(fp, k[:8]) {
			t.Errorf("the fingerprint holds part of the %s key", name)
		}
	}
	changed := map[string]Keys{}
	for name, change := range map[string]func(*Keys){
		"binding":        func(k *Keys) { k.Binding = key(14) },
		"counter":        func(k *Keys) { k.Counter = key(15) },
		"session_tokens": func(k *Keys) { k.SessionTokens = key(16) },
	} {
		k := base
		change(&k)
		changed[name] = k
		if bytes.Equal(k.Fingerprint(), fp) {
			t.Errorf("another %s key gives the same fingerprint", name)
		}
	}
	rotated := base
	rotated.PreviousSessionHash, rotated.PreviousSessionBlock, rotated.PreviousCSRF = base.SessionHash, base.SessionBlock, base.CSRF
	rotated.SessionHash, rotated.SessionBlock, rotated.CSRF = key(21), key(22), key(23)
	if !bytes.Equal(rotated.Fingerprint(), fp) {
		t.Error("a rotation of the session and CSRF keys changed the fingerprint")
	}
}
