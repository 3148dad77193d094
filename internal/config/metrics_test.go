package config

import (
	"strings"
	"testing"
)

func TestCheckMetricsAddr_OnlyLoopbackOrPrivateUnlessAllowed(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		allow bool
		ok    bool
	}{
		{"127.0.0.1:9090", false, true},
		{"[::1]:9090", false, true},
		{"localhost:9090", false, true},
		{"10.1.2.3:9090", false, true},
		{"192.168.1.5:9090", false, true},
		{"[fd00::5]:9090", false, true},
		{"0.0.0.0:9090", false, false},
		{":9090", false, false},
		{"203.0.113.7:9090", false, false},
		{"203.0.113.7:9090", true, true},
		{"127.0.0.1:8080", true, false}, // the public listener
		{"nonsense", false, false},
	} {
		err := CheckMetricsAddr(tc.addr, "127.0.0.1:8080", tc.allow)
		if (err == nil) != tc.ok {
			t.Errorf("CheckMetricsAddr(%q, allow=%v) = %v, want ok=%v", tc.addr, tc.allow, err, tc.ok)
		}
	}
	if _, err := Load(fakeEnv(map[string]string{"ADMIT_METRICS_ADDR": "0.0.0.0:9090"})); err == nil || !strings.Contains(err.Error(), "ADMIT_METRICS_ADDR") {
		t.Errorf("LoadConfig accepted metrics on all interfaces: %v", err)
	}
}
