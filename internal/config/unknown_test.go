package config

import (
	"slices"
	"testing"
)

func TestUnknownVars_NamesAMisspeltAdmitVariableWithTheClosestKnownOne(t *testing.T) {
	got := UnknownVars([]string{"PATH", "ADMIT_DATA", "ADMIT_NETWROK_HOURLY_LIMIT", "ADMIT_SECRET_CSRF",
		"ADMIT_LOG_LEVLE", "CLERK_SECRET_KEY", "ADMIT_SECRET_PREVIOUS_CSRF"})
	want := []UnknownVar{{"ADMIT_NETWROK_HOURLY_LIMIT", "ADMIT_NETWORK_HOURLY_LIMIT"}, {"ADMIT_LOG_LEVLE", "ADMIT_LOG_LEVEL"}}
	if !slices.Equal(got, want) {
		t.Fatalf("UnknownVars=%q, want %q", got, want)
	}
}
