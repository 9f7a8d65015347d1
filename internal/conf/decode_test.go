package conf

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

type target struct{ URL *url.URL }

func (t *target) UnmarshalText(b []byte) error {
	u, err := url.Parse(string(b))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", string(b))
	}
	t.URL = u
	return nil
}

type backend struct {
	Targets []target `yaml:"targets"`
	Timeout Duration `yaml:"timeout"`
}

type route struct {
	ID      string            `yaml:"id"`
	Enabled bool              `yaml:"enabled"`
	Weight  int               `yaml:"weight"`
	Ratio   float64           `yaml:"ratio"`
	Headers map[string]string `yaml:"headers"`
	Backend backend           `yaml:"backend"`
	Token   Secret            `yaml:"token"`
	Extra   *backend          `yaml:"extra"`
}

func (r *route) Validate(path string, errs *Errors) {
	if r.ID == "" {
		errs.Add(Key(path, "id"), "is required")
	}
}

type file struct {
	Name   string  `yaml:"name"`
	Routes []route `yaml:"routes"`
}

func decodeString(t *testing.T, src string, env map[string]string) (file, error) {
	t.Helper()
	n, err := Parse([]byte(src))
	if err != nil {
		return file{}, err
	}
	var f file
	var errs Errors
	d := Decoder{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	d.Decode(n, &f, "", &errs)
	return f, errs.Err()
}

func TestDecode_ErrorsNameTheFieldPath(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"bad url", "routes:\n- id: a\n  backend: {targets: [\"http://ok\", \"htp://x\"]}",
			[]string{`routes[0].backend.targets[1]: "htp://x" is not an http(s) URL`}},
		{"unknown key close", "routes:\n- id: a\n  backend: {targts: []}",
			[]string{`routes[0].backend.targts: unknown key (did you mean "targets"?)`}},
		{"unknown key far", "nope: 1",
			[]string{`nope: unknown key (expected one of: name, routes)`}},
		{"wrong kinds", "name: [a]\nroutes: {a: 1}",
			[]string{`name: must be a string, got a list`, `routes: must be a list, got a mapping`}},
		{"bool", "routes:\n- id: a\n  enabled: yes",
			[]string{`routes[0].enabled: must be true or false, got "yes"`}},
		{"int", "routes:\n- id: a\n  weight: 1.5",
			[]string{`routes[0].weight: "1.5" is not a whole number in range`}},
		{"duration", "routes:\n- id: a\n  backend: {timeout: soon}",
			[]string{`routes[0].backend.timeout: "soon" is not a duration (write 90s, 15m, 1h30m or a number of seconds)`}},
		{"negative duration", "routes:\n- id: a\n  backend: {timeout: -5}",
			[]string{`routes[0].backend.timeout: "-5" is negative; a duration must be 0 or more`}},
		{"validator and all errors at once", "routes:\n- enabled: true\n- id: b\n  weight: x",
			[]string{`routes[0].id: is required`, `routes[1].weight: "x" is not a whole number in range`}},
		{"duplicate", "name: a\nname: b",
			[]string{`name: defined twice`}},
		{"unset env", "name: ${NOPE}",
			[]string{`name: environment variable NOPE is not set`}},
		{"bad env ref", "name: ${1X}",
			[]string{`name: ${1X} is not a valid environment variable reference`}},
		{"secret never quoted", "routes:\n- id: a\n  token: [hunter2]",
			[]string{`routes[0].token: must be a string, got a list`}},
		{"map values", "routes:\n- id: a\n  headers: {a: [1]}",
			[]string{`routes[0].headers.a: must be a string, got a list`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeString(t, tc.src, nil)
			var list List
			if !errors.As(err, &list) {
				t.Fatalf("error = %v, want a List", err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestDecode_Values(t *testing.T) {
	src := `
name: "${NAME} and $${LITERAL} ${EMPTY:-dflt} ${SET_EMPTY}"
base: &base
  timeout: 90
routes:
  - id: a
    enabled: true
    weight: 3
    ratio: 0.5
    headers: {X-A: "1"}
    token: ${TOKEN}
    backend:
      <<: *base
      targets: [http://a:1]
  - id: b
    backend: {timeout: 1m30s}
    extra: {timeout: 2.5}
    enabled: ~
`
	// "base" is not a field of file: prove merges work, but it is reported as unknown.
	env := map[string]string{"NAME": "n", "TOKEN": "s3cr3t", "SET_EMPTY": ""}
	f, err := decodeString(t, src, env)
	if err == nil || err.Error() != `base: unknown key (expected one of: name, routes)` {
		t.Fatalf("err = %v", err)
	}
	if f.Name != "n and ${LITERAL} dflt " {
		t.Errorf("name = %q", f.Name)
	}
	r := f.Routes[0]
	if !r.Enabled || r.Weight != 3 || r.Ratio != 0.5 || r.Headers["X-A"] != "1" || r.Token.Reveal() != "s3cr3t" {
		t.Errorf("route a = %+v", r)
	}
	if r.Backend.Timeout.D() != 90*time.Second || r.Backend.Targets[0].URL.Host != "a:1" {
		t.Errorf("backend a = %+v", r.Backend)
	}
	if f.Routes[1].Backend.Timeout.D() != 90*time.Second || f.Routes[1].Extra.Timeout.D() != 2500*time.Millisecond {
		t.Errorf("route b = %+v", f.Routes[1])
	}
	if fmt.Sprint(r.Token) != "[redacted]" || fmt.Sprintf("%v %+v %#v", r.Token, r.Token, r.Token) != "[redacted] [redacted] [redacted]" {
		t.Errorf("secret printed as %v", r.Token)
	}
}

func TestDecode_DefaultsKept(t *testing.T) {
	n, err := Parse([]byte("id: x"))
	if err != nil {
		t.Fatal(err)
	}
	r := route{Weight: 7, Enabled: true}
	var errs Errors
	(&Decoder{}).Decode(n, &r, "r", &errs)
	if errs.Err() != nil || r.Weight != 7 || !r.Enabled || r.ID != "x" {
		t.Fatalf("r = %+v, err = %v", r, errs.Err())
	}
}

func TestParse(t *testing.T) {
	if n, err := Parse(nil); n != nil || err != nil {
		t.Errorf("empty: %v %v", n, err)
	}
	if _, err := Parse([]byte("a: 1\n---\nb: 2")); err == nil || err.Error() != "the file holds more than one YAML document" {
		t.Errorf("two documents: %v", err)
	}
	if _, err := Parse([]byte("a: [1\n")); err == nil || !strings.HasPrefix(err.Error(), "not valid YAML: ") {
		t.Errorf("syntax: %v", err)
	}
}

func TestDecode_AliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [[], [], [], [], [], [], [], [], [], []]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	n, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	type deep []deep
	var out map[string]deep
	var errs Errors
	(&Decoder{}).Decode(n, &out, "", &errs)
	if !strings.Contains(fmt.Sprint(errs.Err()), "too large") {
		t.Fatalf("err = %v", errs.Err())
	}
}

func TestParseDuration(t *testing.T) {
	cases := map[string]time.Duration{"0": 0, "90": 90 * time.Second, "2.5": 2500 * time.Millisecond, "15m": 15 * time.Minute, "1h30m": 90 * time.Minute, " 3s ": 3 * time.Second}
	for in, want := range cases {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "-1s", "1e300"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"listen", "listn", 1}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q,%q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

type inner struct {
	A string `yaml:"a"`
}

func (i *inner) Validate(path string, errs *Errors) {
	if i.A == "bad" {
		errs.Add(Key(path, "a"), "is bad")
	}
}

type outer struct {
	inner
	B int `yaml:"b"`
}

func TestDecode_EmbeddedStructIsInlined(t *testing.T) {
	n, err := Parse([]byte("a: bad\nb: 2"))
	if err != nil {
		t.Fatal(err)
	}
	var o outer
	var errs Errors
	(&Decoder{}).Decode(n, &o, "p", &errs)
	if o.A != "bad" || o.B != 2 {
		t.Errorf("o = %+v", o)
	}
	// The embedded type's Validate is promoted, so it runs once, for the outer struct.
	if got := fmt.Sprint(errs.Err()); got != "p.a: is bad" {
		t.Errorf("err = %q", got)
	}
}
