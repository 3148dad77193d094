package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// EnvVar is one NAME=value assignment of an environment file.
type EnvVar struct{ Name, Value string }

// ReadEnvFile reads an environment file as systemd reads a unit's
// EnvironmentFile=, so that `admit --env-file /etc/admit/admit.env CMD`
// runs CMD with the values `admit serve` gets from the unit: one
// assignment a line; lines starting with # or ; are comments; blanks
// around the name and the value are dropped; a value may be quoted — in
// '…' every character is itself, in "…" a backslash escapes only " \ `
// and $ (and a line break, which joins the lines); unquoted, a backslash
// escapes any character and a backslash at the end of a line joins the
// next. A name that is not a valid variable name, or a value that is not
// UTF-8, is skipped, as systemd skips it; a backslash ending a comment
// does not make the next line a comment (systemd 254 and later).
func ReadEnvFile(r io.Reader) ([]EnvVar, error) {
	const (
		preKey = iota
		key
		preValue
		value
		valueEscape
		singleQuote
		doubleQuote
		doubleQuoteEscape
		comment
		commentEscape
	)
	var (
		out       []EnvVar
		k, v      strings.Builder
		keyTrim   int // k's length without its trailing blanks
		valueTrim int // v's length without its unescaped trailing blanks
	)
	push := func(trim bool) {
		name, val := k.String()[:keyTrim], v.String()
		if trim {
			val = val[:valueTrim]
		}
		if validEnvName(name) && utf8.ValidString(val) {
			out = append(out, EnvVar{name, val})
		}
		k.Reset()
		v.Reset()
		keyTrim, valueTrim = 0, 0
	}
	br := bufio.NewReader(r)
	state := preKey
	for {
		c, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		blank, newline := c == ' ' || c == '\t', c == '\n' || c == '\r'
		switch state {
		case preKey:
			switch {
			case c == '#' || c == ';':
				state = comment
			case blank || newline:
			default:
				state = key
				k.WriteByte(c)
				keyTrim = k.Len()
			}
		case key:
			switch {
			case newline: // a name without = assigns nothing
				state = preKey
				k.Reset()
				keyTrim = 0
			case c == '=':
				state = preValue
			default:
				k.WriteByte(c)
				if !blank {
					keyTrim = k.Len()
				}
			}
		case preValue:
			switch {
			case newline:
				state = preKey
				push(false)
			case c == '\'':
				state = singleQuote
			case c == '"':
				state = doubleQuote
			case c == '\\':
				state = valueEscape
			case blank:
			default:
				state = value
				v.WriteByte(c)
				valueTrim = v.Len()
			}
		case value:
			switch {
			case newline:
				state = preKey
				push(true)
			case c == '\\':
				state = valueEscape
			default:
				v.WriteByte(c)
				if !blank {
					valueTrim = v.Len()
				}
			}
		case valueEscape:
			state = value
			if c != '\n' {
				v.WriteByte(c)
				valueTrim = v.Len()
			}
		case singleQuote:
			if c == '\'' {
				state = preValue
			} else {
				v.WriteByte(c)
			}
			valueTrim = v.Len()
		case doubleQuote:
			switch c {
			case '"':
				state = preValue
			case '\\':
				state = doubleQuoteEscape
			default:
				v.WriteByte(c)
			}
			valueTrim = v.Len()
		case doubleQuoteEscape:
			state = doubleQuote
			switch {
			case strings.IndexByte("\"\\`$", c) >= 0:
				v.WriteByte(c)
			case c == '\n':
			default:
				v.WriteByte('\\')
				v.WriteByte(c)
			}
			valueTrim = v.Len()
		case comment:
			switch {
			case c == '\\':
				state = commentEscape
			case newline:
				state = preKey
			}
		case commentEscape: // a backslash does not carry a comment onto the next line
			state = comment
			if newline {
				state = preKey
			}
		}
	}
	switch state {
	case preValue, singleQuote, doubleQuote, doubleQuoteEscape:
		push(false)
	case value, valueEscape:
		push(true)
	}
	return out, nil
}

// validEnvName says whether name can be an environment variable's name:
// letters, digits and underscores, not starting with a digit.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// applyEnvFiles takes the leading --env-file FILE options off args and
// sets each file's variables in the process environment, unless the
// environment already set them when admit started: a value given on the
// command line (NAME=value admit --env-file …) wins over the files'. Among
// the files, as among a unit's EnvironmentFile= lines, a later assignment
// wins.
func applyEnvFiles(args []string) ([]string, error) {
	preset := map[string]bool{}
	for _, n := range environNames(os.Environ()) {
		preset[n] = true
	}
	for len(args) > 0 {
		var path string
		switch a := args[0]; {
		case a == "--env-file" || a == "-env-file":
			if len(args) < 2 {
				return nil, usagef("%s needs a file", a)
			}
			path, args = args[1], args[2:]
		case strings.HasPrefix(a, "--env-file="):
			path, args = strings.TrimPrefix(a, "--env-file="), args[1:]
		default:
			return args, nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--env-file: %w", err)
		}
		vars, err := ReadEnvFile(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--env-file %s: %w", path, err)
		}
		for _, ev := range vars { // a later assignment wins, as in systemd
			if !preset[ev.Name] {
				if err := os.Setenv(ev.Name, ev.Value); err != nil {
					return nil, fmt.Errorf("--env-file %s: %w", path, err)
				}
			}
		}
	}
	return args, nil
}
