package views

import "strconv"

func statusText(status int) string { return strconv.Itoa(status) }

func openText(open, retired bool) string {
	switch {
	case retired:
		return "retired"
	case open:
		return "open"
	}
	return "closed"
}

func onText(on bool) string {
	if on {
		return "enabled"
	}
	return "off"
}
