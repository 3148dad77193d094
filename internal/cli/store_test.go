package cli

import (
	"context"
	"testing"

	"admit/store"
)

func TestOpenDB_TheWriteQueueComesFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{{"", store.DefaultSignupQueue}, {"77", 77}} {
		dir := t.TempDir()
		cfg := mustLoadConfig(t, map[string]string{"ADMIT_DATA": dir, "ADMIT_WRITE_QUEUE": tc.env})
		_, db, err := openStore(context.Background(), cfg, store.Options{})
		if err != nil {
			t.Fatalf("openDB: %v", err)
		}
		signups, reserve := db.QueueBounds()
		db.Close()
		if signups != tc.want || reserve != store.DefaultWriteReserve {
			t.Errorf("ADMIT_WRITE_QUEUE=%q: bounds %d and %d, want %d and %d", tc.env, signups, reserve, tc.want, store.DefaultWriteReserve)
		}
	}
}
