package config

import (
	"slices"
	"strings"

	"admit/internal/typo"
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
			if d := typo.Distance(n, k); best < 0 || d < best {
				best, u.Closest = d, k
			}
		}
		out = append(out, u)
	}
	return out
}
