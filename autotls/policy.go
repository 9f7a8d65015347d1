package autotls

import (
	"net/netip"
	"slices"
	"strings"
)

// Verdict says what a TLS handshake for a name gets.
type Verdict int

const (
	// Refuse: no certificate; the handshake fails.
	Refuse Verdict = iota
	// Managed: an exact host of the routes, obtained at start and renewed in the
	// background.
	Managed
	// OnDemand: a name of a wildcard route that on_demand.allow lets through,
	// with no ask URL: obtained at its first handshake.
	OnDemand
	// Ask: as OnDemand, once the ask URL answers 200 for the name.
	Ask
)

func (v Verdict) String() string {
	return [...]string{"refuse", "managed", "on-demand", "ask"}[v]
}

// Policy is which names get a certificate: the exact hosts of the routes, and,
// with on_demand, names of their wildcard hosts. It is immutable; Decide is a
// pure function of it and the name.
type Policy struct {
	exact    map[string]bool
	wild     []string // suffixes with their dot (".example.com"); "" for "*"
	onDemand bool
	allow    []string // patterns: "a.example.com", "*.example.com"
	ask      bool
	skipped  []string // hosts of the routes no CA can issue for
}

// OnDemandRules are node.tls.acme.on_demand: Ask is whether an ask URL is set.
type OnDemandRules struct {
	Ask   bool
	Allow []string
}

// NewPolicy reads the domains of the routes ("host" or "host/path", exact,
// "*.domain" or "*"). IP addresses and localhost names are left out: no ACME CA
// issues for them. od nil: no on-demand issuance.
func NewPolicy(domains []string, od *OnDemandRules) *Policy {
	p := &Policy{exact: map[string]bool{}}
	for _, d := range domains {
		host, _, _ := strings.Cut(d, "/")
		host = normalize(host)
		switch {
		case host == "*":
			p.addWild("")
		case strings.HasPrefix(host, "*."):
			p.addWild(host[1:])
		case host == "" || strings.HasPrefix(host, "["):
			p.skip(host)
		case host == "localhost" || strings.HasSuffix(host, ".localhost"):
			p.skip(host)
		default:
			if _, err := netip.ParseAddr(host); err == nil {
				p.skip(host)
			} else {
				p.exact[host] = true
			}
		}
	}
	if od != nil {
		p.onDemand, p.ask = true, od.Ask
		for _, a := range od.Allow {
			p.allow = append(p.allow, normalize(a))
		}
	}
	return p
}

func (p *Policy) addWild(suffix string) {
	if !slices.Contains(p.wild, suffix) {
		p.wild = append(p.wild, suffix)
	}
}

func (p *Policy) skip(host string) {
	if host != "" && !slices.Contains(p.skipped, host) {
		p.skipped = append(p.skipped, host)
	}
}

// Managed returns the exact hosts, sorted.
func (p *Policy) Managed() []string {
	out := make([]string, 0, len(p.exact))
	for h := range p.exact {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// Skipped returns the hosts of the routes that get no certificate (IP
// addresses, localhost names), in the order of the routes.
func (p *Policy) Skipped() []string { return p.skipped }

// Decide says what a handshake for name (its SNI) gets, and why when it is
// Refuse. A name never gets a certificate unless it is an exact host of a
// route, or matches a wildcard route and on_demand lets it.
func (p *Policy) Decide(name string) (Verdict, string) {
	name = normalize(name)
	switch {
	case name == "":
		return Refuse, "the client sent no server name (SNI)"
	case p.exact[name]:
		return Managed, ""
	case !validName(name):
		return Refuse, "not a DNS name"
	case !slices.ContainsFunc(p.wild, func(s string) bool { return matchSuffix(s, name) }):
		return Refuse, "not a host of the routes"
	case !p.onDemand:
		return Refuse, "it matches only a wildcard route, and node.tls.acme.on_demand is not set"
	case len(p.allow) > 0 && !slices.ContainsFunc(p.allow, func(a string) bool { return matchPattern(a, name) }):
		return Refuse, "not in node.tls.acme.on_demand.allow"
	case p.ask:
		return Ask, ""
	}
	return OnDemand, ""
}

// matchSuffix: "" (the route "*") matches every name; ".example.com" the names
// that end with it, not example.com itself.
func matchSuffix(suffix, name string) bool {
	return suffix == "" || len(name) > len(suffix) && strings.HasSuffix(name, suffix)
}

// matchPattern matches an allow pattern: an exact name, or "*.domain" as a
// route's wildcard host does.
func matchPattern(pattern, name string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		return matchSuffix(suffix, name)
	}
	return pattern == name
}

// normalize lowers a host's case and drops a final dot.
func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
}

// validName reports whether name is dot-separated labels of letters, digits,
// '-' and '_', at most 253 characters: what a client may send as SNI and a CA
// may be asked for.
func validName(name string) bool {
	if len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
