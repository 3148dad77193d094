package config

import (
	"slices"
	"strings"
)

// UnknownVar is a variable of admit's prefix (ADMIT_) that admit does not
// read: most likely a misspelt one, whose setting is silently not in force.
type UnknownVar struct {
	Name string
	// Closest is the known variable nearest in spelling.
	Closest string
}

// UnknownVars lists the names (of the process's environment) that start
// with ADMIT_ and are not variables admit reads, each with the closest
// known name, in the order given. Names are compared as the environment
// spells them: ADMIT_ variables are upper case.
func UnknownVars(names []string) []UnknownVar {
	var known []string
	for _, v := range Vars {
		for _, n := range v.Names() {
			if strings.HasPrefix(n, "ADMIT_") {
				known = append(known, n)
			}
		}
	}
	var out []UnknownVar
	for _, n := range names {
		if !strings.HasPrefix(n, "ADMIT_") || slices.Contains(known, n) {
			continue
		}
		u := UnknownVar{Name: n}
		best := -1
		for _, k := range known {
			if d := editDistance(n, k); best < 0 || d < best {
				best, u.Closest = d, k
			}
		}
		out = append(out, u)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
