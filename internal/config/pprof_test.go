package config

import (
	"strings"
	"testing"
)

func TestLoadConfig_PprofAddrIsOffByDefaultAndLoopbackOnly(t *testing.T) {
	c, err := Load(fakeEnv(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if c.PprofAddr != "" {
		t.Fatalf("PprofAddr=%q by default, want off", c.PprofAddr)
	}
	c, err = Load(fakeEnv(map[string]string{"ADMIT_PPROF_ADDR": "127.0.0.1:6060"}))
	if err != nil || c.PprofAddr != "127.0.0.1:6060" {
		t.Fatalf("loopback pprof address: %+v, %v", c, err)
	}
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "localhost"} {
		_, err := Load(fakeEnv(map[string]string{"ADMIT_PPROF_ADDR": addr}))
		if err == nil || !strings.Contains(err.Error(), "ADMIT_PPROF_ADDR") {
			t.Errorf("ADMIT_PPROF_ADDR=%q: err=%v, want a refusal naming the variable", addr, err)
		}
	}
}
