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
	var p envParser
	br := bufio.NewReader(r)
	for {
		c, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p.step(c)
	}
	p.end()
	return p.out, nil
}

// envState is where ReadEnvFile is in a line.
type envState int

const (
	envPreKey envState = iota
	envKey
	envPreValue
	envValue
	envValueEscape
	envSingleQuote
	envDoubleQuote
	envDoubleQuoteEscape
	envComment
	envCommentEscape
)

// envParser reads an environment file a byte at a time.
type envParser struct {
	state     envState
	out       []EnvVar
	k, v      strings.Builder
	keyTrim   int // k's length without its trailing blanks
	valueTrim int // v's length without its unescaped trailing blanks
}

// push ends an assignment, its value's trailing blanks dropped if trim:
// kept if the name is valid and the value UTF-8, as systemd keeps it.
func (p *envParser) push(trim bool) {
	name, val := p.k.String()[:p.keyTrim], p.v.String()
	if trim {
		val = val[:p.valueTrim]
	}
	if validEnvName(name) && utf8.ValidString(val) {
		p.out = append(p.out, EnvVar{name, val})
	}
	p.k.Reset()
	p.v.Reset()
	p.keyTrim, p.valueTrim = 0, 0
}

// end ends the file: an assignment the last line left open is kept.
func (p *envParser) end() {
	switch p.state {
	case envPreValue, envSingleQuote, envDoubleQuote, envDoubleQuoteEscape:
		p.push(false)
	case envValue, envValueEscape:
		p.push(true)
	}
}

// step reads one byte.
func (p *envParser) step(c byte) {
	blank, newline := c == ' ' || c == '\t', c == '\n' || c == '\r'
	switch p.state {
	case envPreKey, envKey:
		p.key(c, blank, newline)
	case envPreValue, envValue, envValueEscape:
		p.value(c, blank, newline)
	case envSingleQuote, envDoubleQuote, envDoubleQuoteEscape:
		p.quoted(c)
	case envComment, envCommentEscape:
		p.comment(c, newline)
	}
}

// key reads a byte before the =: a comment, blanks or the name.
func (p *envParser) key(c byte, blank, newline bool) {
	if p.state == envPreKey {
		switch {
		case c == '#' || c == ';':
			p.state = envComment
		case blank || newline:
		default:
			p.state = envKey
			p.k.WriteByte(c)
			p.keyTrim = p.k.Len()
		}
		return
	}
	switch {
	case newline: // a name without = assigns nothing
		p.state = envPreKey
		p.k.Reset()
		p.keyTrim = 0
	case c == '=':
		p.state = envPreValue
	default:
		p.k.WriteByte(c)
		if !blank {
			p.keyTrim = p.k.Len()
		}
	}
}

// value reads a byte of an unquoted value, or before the value starts.
func (p *envParser) value(c byte, blank, newline bool) {
	switch p.state {
	case envPreValue:
		switch {
		case newline:
			p.state = envPreKey
			p.push(false)
		case c == '\'':
			p.state = envSingleQuote
		case c == '"':
			p.state = envDoubleQuote
		case c == '\\':
			p.state = envValueEscape
		case blank:
		default:
			p.state = envValue
			p.v.WriteByte(c)
			p.valueTrim = p.v.Len()
		}
	case envValue:
		switch {
		case newline:
			p.state = envPreKey
			p.push(true)
		case c == '\\':
			p.state = envValueEscape
		default:
			p.v.WriteByte(c)
			if !blank {
				p.valueTrim = p.v.Len()
			}
		}
	case envValueEscape:
		p.state = envValue
		if c != '\n' {
			p.v.WriteByte(c)
			p.valueTrim = p.v.Len()
		}
	}
}

// quoted reads a byte inside quotes.
func (p *envParser) quoted(c byte) {
	switch p.state {
	case envSingleQuote:
		if c == '\'' {
			p.state = envPreValue
		} else {
			p.v.WriteByte(c)
		}
	case envDoubleQuote:
		switch c {
		case '"':
			p.state = envPreValue
		case '\\':
			p.state = envDoubleQuoteEscape
		default:
			p.v.WriteByte(c)
		}
	case envDoubleQuoteEscape:
		p.state = envDoubleQuote
		switch {
		case strings.IndexByte("\"\\`$", c) >= 0:
			p.v.WriteByte(c)
		case c == '\n':
		default:
			p.v.WriteByte('\\')
			p.v.WriteByte(c)
		}
	}
	p.valueTrim = p.v.Len()
}

// comment reads a byte of a comment, which a line break ends.
func (p *envParser) comment(c byte, newline bool) {
	if p.state == envCommentEscape { // a backslash does not carry a comment onto the next line
		p.state = envComment
		if newline {
			p.state = envPreKey
		}
		return
	}
	switch {
	case c == '\\':
		p.state = envCommentEscape
	case newline:
		p.state = envPreKey
	}
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
