package builtin

import (
	"net/http"
	"net/netip"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

// IPFilterID is the id of the ip_filter plugin.
const IPFilterID = "ip_filter"

// IPFilter is the ip_filter plugin: it lets a request through or answers 403
// depending on the client address.
//
//	plugins:
//	  - plugin: ip_filter
//	    config:
//	      allow: [10.0.0.0/8, 192.0.2.7]
//	      deny: [10.6.6.0/24]
//	      trusted_proxies: [127.0.0.1]
//
// Deny wins over allow; with allow not empty only the addresses it lists get
// through. The client address is the connection's peer, or, when the peer is one
// of trusted_proxies, the first address of X-Forwarded-For read from the right
// that is not a trusted proxy. A request whose address cannot be read is denied
// when allow is not empty.
type IPFilter struct {
	Allow          []string `yaml:"allow"`
	Deny           []string `yaml:"deny"`
	TrustedProxies []string `yaml:"trusted_proxies"`

	allow, deny, trusted []netip.Prefix
}

var (
	_ plugin.AccessValidator = (*IPFilter)(nil)
	_ conf.Validator         = (*IPFilter)(nil)
)

// Validate parses the address lists; each entry is an IP address or a CIDR
// prefix.
func (f *IPFilter) Validate(path string, errs *conf.Errors) {
	f.allow = parsePrefixes(f.Allow, conf.Key(path, "allow"), errs)
	f.deny = parsePrefixes(f.Deny, conf.Key(path, "deny"), errs)
	f.trusted = parsePrefixes(f.TrustedProxies, conf.Key(path, "trusted_proxies"), errs)
}

func parsePrefixes(list []string, path string, errs *conf.Errors) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := plugin.ParseAddrOrPrefix(s)
		if err != nil {
			errs.Add(conf.Index(path, i), "%s", err.Error())
			continue
		}
		out = append(out, p)
	}
	return out
}

// ValidateAccess answers 403 {"error":"access denied","request_id":…} to a
// client the lists refuse. It never blocks and never fails.
func (f *IPFilter) ValidateAccess(ex *plugin.Exchange) (*plugin.Answer, error) {
	ip := plugin.ClientIP(ex.Request, f.trusted)
	if f.allowed(ip) {
		return nil, nil
	}
	ex.Logger.Debug("access denied by ip_filter", "client", ip)
	return plugin.JSONAnswer(http.StatusForbidden, map[string]string{"error": "access denied", "request_id": ex.ID}), nil
}

func (f *IPFilter) allowed(ip netip.Addr) bool {
	if contains(f.deny, ip) {
		return false
	}
	return len(f.allow) == 0 || contains(f.allow, ip)
}

func contains(ps []netip.Prefix, a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
