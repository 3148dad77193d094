package cases

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

func mustDo(t *testing.T) {
	t.Helper()
	if err := errors.New("x"); err != nil {
		t.Fatalf("do: %v", err)
	}
}

// mustDoTwice reaches Fatal through mustDo.
func mustDoTwice(tb testing.TB) {
	mustDo(tb.(*testing.T))
	mustDoTB(tb)
}

func mustDoTB(tb testing.TB) {
	tb.FailNow()
}

// logOnly may be called from anywhere.
func logOnly(t *testing.T) { t.Errorf("x") }

func TestBad(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.Fatal("x") // want "Fatal called off the test goroutine"
	}()
	wg.Go(func() {
		mustDo(t) // want "helper given the test"
	})
	wg.Go(func() {
		mustDoTB(t) // want "helper given the test"
	})
	go mustDoTwice(t)                                        // want "helper given the test"
	time.AfterFunc(time.Millisecond, func() { t.Skip("x") }) // want "Skip called off the test goroutine"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Fatalf("x") // want "Fatalf called off the test goroutine"
	})
	_ = h
	wg.Wait()
}

func TestGood(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		logOnly(t)
		t.Errorf("reported with Errorf: allowed")
		errs <- errors.New("x")
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	go func() {
		t.Run("sub", func(t *testing.T) { t.Fatal("a subtest's own goroutine") })
	}()
	mustDo(t)
	t.Cleanup(func() { mustDo(t) })
}
