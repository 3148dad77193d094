package store

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
)

func TestAgreeServerKeys_TheFirstFingerprintIsKeptAndAnotherRefused(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	first, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	if err := db.AgreeServerKeys(ctx, first); err != nil {
		t.Fatalf("first server: %v", err)
	}
	if err := db.AgreeServerKeys(ctx, first); err != nil {
		t.Fatalf("a server with the same keys: %v", err)
	}
	if err := db.AgreeServerKeys(ctx, other); !errors.Is(err, ErrServerKeysDiffer) {
		t.Fatalf("a server with other keys: err=%v, want ErrServerKeysDiffer", err)
	}
	if err := db.AgreeServerKeys(ctx, first[:31]); err == nil || errors.Is(err, ErrServerKeysDiffer) {
		t.Fatalf("a fingerprint of 31 bytes: err=%v, want a refusal of its length", err)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM server_key_fingerprint`); got != 1 {
		t.Fatalf("%d fingerprints recorded, want 1", got)
	}
}

// Servers starting together with different keys: exactly one set of keys
// is recorded, and every server with another is refused.
func TestAgreeServerKeys_ServersStartingTogetherAgreeOnOne(t *testing.T) {
	db := MustOpenDB(t)
	const servers = 24
	errs := make([]error, servers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range servers {
		wg.Go(func() {
			<-start
			// Three distinct key sets among the servers.
			errs[i] = db.AgreeServerKeys(context.Background(), bytes.Repeat([]byte{byte(i % 3)}, 32))
		})
	}
	close(start)
	wg.Wait()
	var recorded []byte
	if err := db.View(context.Background(), func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT digest FROM server_key_fingerprint`).Scan(&recorded)
	}); err != nil {
		t.Fatal(err)
	}
	agreed := 0
	for i, err := range errs {
		same := recorded[0] == byte(i%3)
		switch {
		case same && err == nil:
			agreed++
		case !same && errors.Is(err, ErrServerKeysDiffer):
		default:
			t.Errorf("server %d (keys %d, recorded %d): %v", i, i%3, recorded[0], err)
		}
	}
	if agreed != servers/3 {
		t.Fatalf("%d servers agreed, want the %d with the recorded keys", agreed, servers/3)
	}
}
