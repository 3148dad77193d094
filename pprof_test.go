package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestLoadConfig_PprofAddrIsOffByDefaultAndLoopbackOnly(t *testing.T) {
	c, err := LoadConfig(fakeEnv(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if c.PprofAddr != "" {
		t.Fatalf("PprofAddr=%q by default, want off", c.PprofAddr)
	}
	c, err = LoadConfig(fakeEnv(map[string]string{"ADMIT_PPROF_ADDR": "127.0.0.1:6060"}))
	if err != nil || c.PprofAddr != "127.0.0.1:6060" {
		t.Fatalf("loopback pprof address: %+v, %v", c, err)
	}
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "localhost"} {
		_, err := LoadConfig(fakeEnv(map[string]string{"ADMIT_PPROF_ADDR": addr}))
		if err == nil || !strings.Contains(err.Error(), "ADMIT_PPROF_ADDR") {
			t.Errorf("ADMIT_PPROF_ADDR=%q: err=%v, want a refusal naming the variable", addr, err)
		}
	}
}

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
