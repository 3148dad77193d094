package config

import "strings"

// Setting is one variable as `admit config` shows it.
type Setting struct {
	Name string
	// Value is the value in force, or "(hidden)" for a secret that is set;
	// for an unset variable, its default.
	Value string
	// Source is where Value came from: "environment", "default", or what
	// it was derived from.
	Source string
}

// hidden stands for a secret's value.
const hidden = "(hidden)"

// get is the environment's value of name, recorded for Settings when set.
func (r *reader) get(name string) string {
	v := r.getenv(name)
	if t := strings.TrimSpace(v); t != "" {
		r.set[name] = t
	}
	return v
}

// Settings lists every variable of Vars with the value in force and where
// it came from. A secret's value is never in it: a set secret shows as
// "(hidden)", and a value read from a file (ADMIT_OIDC_CLIENT_SECRET_FILE)
// shows as the file's path only.
func (c *Config) Settings() []Setting {
	var out []Setting
	for _, v := range Vars {
		for _, n := range v.Names() {
			out = append(out, c.setting(v, n))
		}
	}
	return out
}

// setting is the Setting of the variable name of v.
func (c *Config) setting(v Var, name string) Setting {
	if val, ok := c.set[name]; ok {
		switch {
		case isSecret(v, name):
			val = hidden
		case name == "ADMIT_DATABASE_URL":
			val = RedactDatabaseURL(val) // rule: the password is never shown
		}
		return Setting{Name: name, Value: val, Source: "environment"}
	}
	switch {
	case name == "ADMIT_PUBLIC_URL" && c.PublicURL != nil:
		return Setting{Name: name, Value: c.PublicURL.String(), Source: "derived from ADMIT_ADDR"}
	case name == "CLERK_AUTHORIZED_PARTIES" && !c.DevMode() && !c.OIDCMode():
		return Setting{Name: name, Value: strings.Join(c.Clerk.AuthorizedParties, ","), Source: "derived from ADMIT_PUBLIC_URL"}
	}
	return Setting{Name: name, Value: strings.ReplaceAll(v.Default, "`", ""), Source: "default"}
}
