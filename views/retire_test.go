package views

import (
	"testing"
	"time"
)

func TestCount_GroupsThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 340000: "340,000",
		500000: "500,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d)=%q, want %q", n, got, want)
		}
	}
}

func TestRetirementTexts_SayHowFarAndWhen(t *testing.T) {
	by := time.Date(2026, 12, 29, 10, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		r    RetirementView
		want string
	}{
		{RetirementView{Pending: true, Done: 340000, Total: 500000},
			"Finishing the retirement: 340,000 of 500,000 entries scheduled for erasure."},
		{RetirementView{Pending: true, Done: 0, Total: 1}, "Finishing the retirement: 0 of 1 entry scheduled for erasure."},
		{RetirementView{Done: 500000, Total: 500000, ErasedBy: &by},
			"The retirement is finished: all 500,000 entries are scheduled for erasure, and their addresses will be erased on 29 Dec 2026."},
		{RetirementView{Done: 1, Total: 1, ErasedBy: &by},
			"The retirement is finished: its 1 entry is scheduled for erasure, and its address will be erased on 29 Dec 2026."},
		{RetirementView{}, "The retirement is finished. The program had no entries to erase."},
	} {
		got := retireDoneText(tc.r)
		if tc.r.Pending {
			got = retireProgressText(tc.r)
		}
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
