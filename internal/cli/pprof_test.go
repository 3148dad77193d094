package cli

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

func TestStartPprof_ServesProfilesOnItsOwnListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := l.Addr().String()
	l.Close()
	stop, err := startPprof(ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + ln + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	resp, err = http.Get("http://" + ln + "/waitlist/demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusNotFound; got != want {
		t.Fatalf("an app route on the pprof listener: status=%d, want %d", got, want)
	}
}
