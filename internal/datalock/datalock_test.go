package datalock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDataDir_LockIsExclusiveAndNamesItsHolder(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	first, err := Take(data, "serve")
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	_, err = Take(data, "migrate")
	busy := new(BusyError)
	if !errors.As(err, &busy) || busy.PID != os.Getpid() || busy.Cmd != "serve" {
		t.Fatalf("second lock: %v, want it held by serve, PID %d", err, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Take(data, "migrate")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.Release()
}
