package typo

import "testing"

func TestDistance_CountsEachEditAndASwapOnce(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"gmail.com", "gmail.com", 0},
		{"gmial.com", "gmail.com", 1},  // a swap of neighbours
		{"gmail.con", "gmail.com", 1},  // a substitution
		{"gmai.com", "gmail.com", 1},   // a deletion
		{"gmaill.com", "gmail.com", 1}, // an insertion
		{"gmial.con", "gmail.com", 2},
		{"ADMIT_NETWROK_HOURLY_LIMIT", "ADMIT_NETWORK_HOURLY_LIMIT", 1},
		{"abc", "", 3},
		{"", "abc", 3},
		{"ca", "abc", 3}, // the restricted distance: no edit of a swapped pair
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
