package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reapergw/reaper/internal/certtest"
)

func TestParse_ACMEDefaults(t *testing.T) {
	cfg, err := Parse([]byte("node: {id: n1, tls: {acme: {agree: true}}}"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Node.TLS.ACME
	if a == nil {
		t.Fatal("node.tls.acme read as nil")
	}
	if a.CA != LetsEncryptCA || a.HTTPListen != ":80" || a.Email != "" || a.CARoot != "" || a.OnDemand != nil ||
		!slices.Equal(a.Challenges, []string{"http-01", "tls-alpn-01"}) {
		t.Errorf("defaults: %+v", a)
	}
	if !a.Has(ChallengeHTTP01) || !a.Has(ChallengeTLSALPN) {
		t.Errorf("Has: both challenges are on by default")
	}
}

func TestParse_ACMEEveryKey(t *testing.T) {
	dir := t.TempDir()
	root := certtest.Write(t, dir, "root.pem", certtest.NewCA(t, "private CA").PEM)
	src := fmt.Sprintf(`node:
  id: n1
  tls:
    acme:
      email: ops@example.com
      ca: https://127.0.0.1:14000/dir
      ca_root: %s
      agree: true
      http_listen: 127.0.0.1:8081
      challenges: [tls-alpn-01]
      on_demand: {ask: "http://127.0.0.1:5555/ask", allow: ["*.example.com", a.example.org]}
`, root)
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Node.TLS.ACME
	if a.Email != "ops@example.com" || a.CA != "https://127.0.0.1:14000/dir" || a.CARoot != root || !a.Agree ||
		a.HTTPListen != "127.0.0.1:8081" || !slices.Equal(a.Challenges, []string{"tls-alpn-01"}) || a.Has(ChallengeHTTP01) ||
		a.OnDemand == nil || a.OnDemand.Ask != "http://127.0.0.1:5555/ask" ||
		!slices.Equal(a.OnDemand.Allow, []string{"*.example.com", "a.example.org"}) {
		t.Errorf("read as %+v (on_demand %+v)", a, a.OnDemand)
	}
}

func TestParse_ACMEProblems(t *testing.T) {
	dir := t.TempDir()
	notPEM := certtest.Write(t, dir, "notes.txt", []byte("not a certificate\n"))
	missing := filepath.Join(dir, "nope.pem")
	cases := []struct {
		name, src string
		want      []string
	}{
		{"terms not agreed", "node: {tls: {acme: {}}}", []string{
			`node.tls.acme.agree: must be true: it says that you agree to the terms of service of the CA (` + LetsEncryptCA + `)`,
		}},
		{"files and acme", "node: {tls: {cert: /x.crt, key: /x.key, acme: {agree: true}}}", []string{
			`node.tls.cert: cannot be used with node.tls.acme: the certificates come from files or from the CA, not both`,
			`node.tls.key: cannot be used with node.tls.acme: the certificates come from files or from the CA, not both`,
		}},
		{"bad values", fmt.Sprintf(`node: {tls: {acme: {agree: true, email: "not an address", ca: "http://ca.example/dir",
  ca_root: %q, http_listen: "eighty", challenges: [http-01, dns-01, http-01]}}}`, notPEM), []string{
			`node.tls.acme.email: "not an address" is not an email address`,
			`node.tls.acme.ca: "http://ca.example/dir" is not the URL of the CA's ACME directory (an https URL)`,
			`node.tls.acme.ca_root: ` + fmt.Sprintf("%q", notPEM) + ` holds no PEM certificate`,
			`node.tls.acme.http_listen: "eighty" is not an address (write host:port, such as 127.0.0.1:8080 or :8080)`,
			`node.tls.acme.challenges[1]: "dns-01" is not a challenge (use http-01 or tls-alpn-01)`,
			`node.tls.acme.challenges[2]: "http-01" is listed twice`,
		}},
		{"no challenge, no root file", fmt.Sprintf("node: {tls: {acme: {agree: true, challenges: [], ca_root: %q}}}", missing), []string{
			`node.tls.acme.ca_root: ` + fmt.Sprintf("%q", missing) + ` cannot be read: no such file or directory`,
			`node.tls.acme.challenges: at least one challenge is required (http-01, tls-alpn-01)`,
		}},
		{"on demand with neither ask nor allow", "node: {tls: {acme: {agree: true, on_demand: {}}}}", []string{
			`node.tls.acme.on_demand: needs ask or allow (or both): without them any name a client sends would get a certificate`,
		}},
		{"on demand values", `node: {tls: {acme: {agree: true, on_demand: {ask: "ftp://x/ask?token=s3cret", allow: ["*", "a.*.com", "*.ok.example"]}}}}`, []string{
			`node.tls.acme.on_demand.ask: is not an http or https URL with a host`,
			`node.tls.acme.on_demand.allow[0]: "*" is not a host or *.domain pattern (a.example.com, *.example.com)`,
			`node.tls.acme.on_demand.allow[1]: "a.*.com" is not a host or *.domain pattern (a.example.com, *.example.com)`,
		}},
		{"http_listen is the gateway", "node: {listen: '127.0.0.1:8080', tls: {acme: {agree: true, http_listen: '127.0.0.1:8080'}}}", []string{
			`node.tls.acme.http_listen: "127.0.0.1:8080" is node.listen too: the challenges and redirects need a listener of their own`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := problems(t, c.src)
			if !slices.Equal(got, c.want) {
				t.Errorf("problems:\n  %q\nwant\n  %q", got, c.want)
			}
		})
	}
}
