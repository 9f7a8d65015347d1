package config

import (
	"crypto/x509"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/reapergw/reaper/internal/conf"
)

// ACME turns on automatic HTTPS (node.tls.acme, docs/tls.md): the gateway gets
// its certificates from an ACME CA (Let's Encrypt by default) for the exact hosts
// of the routes, and for names of wildcard routes that on_demand allows.
type ACME struct {
	// Email is given to the CA with the account (expiry notices); optional.
	Email string `yaml:"email"`
	// CA is the URL of the CA's ACME directory; default Let's Encrypt's production.
	CA string `yaml:"ca"`
	// CARoot is a PEM file of the roots that sign the CA directory's HTTPS
	// certificate, for a private CA (pebble, step-ca); default: the system roots.
	CARoot string `yaml:"ca_root"`
	// Agree must be true: the operator agrees to the CA's terms of service.
	Agree bool `yaml:"agree"`
	// HTTPListen serves the HTTP-01 challenges and redirects every other request
	// to https; default ":80".
	HTTPListen string `yaml:"http_listen"`
	// Challenges the CA may use: http-01, tls-alpn-01; default both.
	Challenges []string `yaml:"challenges"`
	// OnDemand lets names of wildcard routes get a certificate at their first
	// handshake; nil: only the exact hosts of the routes get one.
	OnDemand *OnDemand `yaml:"on_demand"`
}

// OnDemand says which names of wildcard routes (*.example.com, *) may get a
// certificate at their first handshake. With both keys, a name needs both.
type OnDemand struct {
	// Ask is a URL that reaper asks with GET ?domain=NAME; 200 allows the name.
	Ask string `yaml:"ask"`
	// Allow lists host patterns (a.example.com, *.example.com) a name must match.
	Allow []string `yaml:"allow"`
}

// The ACME defaults and names.
const (
	LetsEncryptCA     = "https://acme-v02.api.letsencrypt.org/directory"
	ChallengeHTTP01   = "http-01"
	ChallengeTLSALPN  = "tls-alpn-01"
	DefaultHTTPListen = ":80"
)

// DefaultACME is node.tls.acme with every default set.
func DefaultACME() ACME {
	return ACME{CA: LetsEncryptCA, HTTPListen: DefaultHTTPListen, Challenges: []string{ChallengeHTTP01, ChallengeTLSALPN}}
}

// UnmarshalConf decodes node.tls.acme, starting from DefaultACME, and checks it.
func (a *ACME) UnmarshalConf(d *conf.Decoder, n *yaml.Node, path string, errs *conf.Errors) {
	type plain ACME // no methods: decodes field by field
	*a = DefaultACME()
	d.Decode(n, (*plain)(a), path, errs)
	a.validate(path, errs)
}

// Has reports whether the challenge (ChallengeHTTP01, ChallengeTLSALPN) is on.
func (a *ACME) Has(challenge string) bool { return slices.Contains(a.Challenges, challenge) }

func (a *ACME) validate(path string, errs *conf.Errors) {
	if !a.Agree {
		errs.Add(conf.Key(path, "agree"), "must be true: it says that you agree to the terms of service of the CA (%s)", a.CA)
	}
	if a.Email != "" {
		if addr, err := mail.ParseAddress(a.Email); err != nil || addr.Address != a.Email {
			errs.Add(conf.Key(path, "email"), "%s is not an email address", strconv.Quote(a.Email))
		}
	}
	checkHTTPSURL(a.CA, conf.Key(path, "ca"), "the URL of the CA's ACME directory", errs)
	if a.CARoot != "" {
		checkRoots(a.CARoot, conf.Key(path, "ca_root"), errs)
	}
	checkAddr(a.HTTPListen, conf.Key(path, "http_listen"), errs)
	cp := conf.Key(path, "challenges")
	if len(a.Challenges) == 0 {
		errs.Add(cp, "at least one challenge is required (http-01, tls-alpn-01)")
	}
	for i, c := range a.Challenges {
		switch {
		case c != ChallengeHTTP01 && c != ChallengeTLSALPN:
			errs.Add(conf.Index(cp, i), "%s is not a challenge (use http-01 or tls-alpn-01)", strconv.Quote(c))
		case slices.Index(a.Challenges, c) < i:
			errs.Add(conf.Index(cp, i), "%s is listed twice", strconv.Quote(c))
		}
	}
}

// Validate checks node.tls.acme.on_demand.
func (o *OnDemand) Validate(path string, errs *conf.Errors) {
	if o.Ask == "" && len(o.Allow) == 0 {
		errs.Add(path, "needs ask or allow (or both): without them any name a client sends would get a certificate")
	}
	if o.Ask != "" {
		u, err := url.Parse(o.Ask)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Not quoted: the URL may carry a token in its query.
			errs.Add(conf.Key(path, "ask"), "is not an http or https URL with a host")
		}
	}
	for i, p := range o.Allow {
		if !validHostPattern(p) {
			errs.Add(conf.Index(conf.Key(path, "allow"), i), "%s is not a host or *.domain pattern (a.example.com, *.example.com)", strconv.Quote(p))
		}
	}
}

// validHostPattern reports whether p is a DNS name or *.name: "*" alone, which
// would allow any name, is not one.
func validHostPattern(p string) bool {
	p = strings.TrimPrefix(p, "*.")
	if p == "" || len(p) > 253 || strings.Contains(p, "*") {
		return false
	}
	for label := range strings.SplitSeq(p, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return false
		}
	}
	return true
}

// checkHTTPSURL checks that s is an https URL with a host.
func checkHTTPSURL(s, path, what string, errs *conf.Errors) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		errs.Add(path, "%s is not %s (an https URL)", strconv.Quote(s), what)
	}
}

// checkRoots checks that file holds at least one PEM certificate.
func checkRoots(file, path string, errs *conf.Errors) {
	data, err := os.ReadFile(file)
	if err != nil {
		errs.Add(path, "%s", conf.Unreadable(file, err))
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		errs.Add(path, "%s holds no PEM certificate", strconv.Quote(file))
	}
}
