package conf

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// expand replaces ${VAR} and ${VAR:-default} with values from the environment and
// $${ with a literal ${. A reference to an unset variable without a default is an
// error that names the variable (never a value).
func (d *Decoder) expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", errors.New("unclosed ${ (write $${ for a literal ${)")
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !ValidEnvName(name) {
			return "", fmt.Errorf("${%s} is not a valid environment variable reference", ref)
		}
		val, ok := d.lookup(name)
		switch {
		case ok && val != "":
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		case ok:
			// set but empty: an empty value, as the shell gives
		default:
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		s = s[i+end+1:]
	}
}

// ValidEnvName reports whether s may name an environment variable: letters,
// digits and '_', not starting with a digit (the shell's rule).
func ValidEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Duration is a time.Duration written in Go syntax (90s, 1h30m) or as a bare number
// of seconds (90, 2.5), as the reference reaper's JSON has them. It must not be
// negative.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the Go syntax, so a decoded configuration can be printed back.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalConf decodes a scalar duration.
func (d *Duration) UnmarshalConf(dec *Decoder, n *yaml.Node, path string, errs *Errors) {
	s, ok := dec.scalar(n, path, errs, "a duration")
	if !ok {
		return
	}
	if err := d.UnmarshalText([]byte(s)); err != nil {
		errs.Add(path, "%s", err.Error())
	}
}

// UnmarshalText parses Go syntax or a number of seconds.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses Go syntax or a bare number of seconds; negative values are
// refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var v time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f > float64(1<<63-1)/float64(time.Second) {
			return 0, fmt.Errorf("%s is too long a duration", strconv.Quote(s))
		}
		v = time.Duration(f * float64(time.Second))
	} else {
		v, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s is not a duration (write 90s, 15m, 1h30m or a number of seconds)", strconv.Quote(s))
		}
	}
	if v < 0 {
		return 0, fmt.Errorf("%s is negative; a duration must be 0 or more", strconv.Quote(s))
	}
	return v, nil
}

// Secret is a string that never shows: not in logs (slog), not in fmt output, not in
// JSON, not in configuration errors. Read it with Reveal.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value, for the one place that must send it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether a value was given.
func (s Secret) IsSet() bool { return s != "" }

func (s Secret) String() string               { return redacted }
func (s Secret) GoString() string             { return redacted }
func (s Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// UnmarshalConf decodes a scalar without ever quoting it in an error.
func (s *Secret) UnmarshalConf(d *Decoder, n *yaml.Node, path string, errs *Errors) {
	v, ok := d.scalar(n, path, errs, "a string")
	if ok {
		*s = Secret(v)
	}
}
