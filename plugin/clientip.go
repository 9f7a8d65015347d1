package plugin

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// requestIDs returns the request's id and the id the client sent of its own.
// The id is the X-Request-Id that a trusted proxy (node.trusted_proxies) sent,
// when it is a sane token (1 to 128 printable ASCII characters, no space): the
// proxy in front numbers the requests. Any other client's id is not taken as the
// request's: it could repeat another request's id on purpose and mix their log
// lines. It is kept as client (for the access log's client_request_id) when it is
// a sane token, and the request gets a new UUIDv7.
func requestIDs(values []string, trusted bool) (id, client string) {
	if len(values) == 1 && validRequestID(values[0]) {
		if trusted {
			return values[0], ""
		}
		client = values[0]
	}
	return uuid.Must(uuid.NewV7()).String(), client
}

// RequestIDs returns the id of a request that the gateway's handler does not
// serve (the producer endpoint in front of it), as the gateway would give it
// (requestIDs): the X-Request-Id of a trusted proxy, else a new one, and the
// client's own id.
func RequestIDs(req *http.Request, trusted []netip.Prefix) (id, client string) {
	return requestIDs(req.Header[headerRequestID], inPrefixes(trusted, peerAddr(req.RemoteAddr)))
}

func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// peerAddr parses a connection's remote address ("ip:port", or a bare ip).
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

func inPrefixes(ps []netip.Prefix, a netip.Addr) bool {
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

// ClientIP returns the address of the client of req: the connection's peer, or,
// when the peer is in trusted, the first address of X-Forwarded-For that is not in
// trusted, reading from the right (each trusted proxy appends the address it saw).
// When every address is trusted it returns the leftmost; an entry that is not an
// address stops the walk at the last good one. The result is invalid only when
// RemoteAddr is not an address.
func ClientIP(req *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := peerAddr(req.RemoteAddr)
	if !inPrefixes(trusted, peer) {
		return peer
	}
	return clientFromXFF(req.Header["X-Forwarded-For"], peer, trusted)
}

func clientFromXFF(values []string, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	client := peer
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" {
			part := v
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				part, v = v[j+1:], v[:j]
			} else {
				v = ""
			}
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a, ok := parseForwardedAddr(part)
			if !ok {
				return client
			}
			client = a
			if !inPrefixes(trusted, a) {
				return a
			}
		}
	}
	return client
}

// parseForwardedAddr reads one X-Forwarded-For entry: an address, possibly with a
// port, IPv6 possibly in brackets.
func parseForwardedAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// ParseAddrOrPrefix parses a CIDR prefix ("10.0.0.0/8") or a single address
// ("192.0.2.1", "::1"), as configurations write trusted proxies and filters. The
// error says what was expected, quoting s.
func ParseAddrOrPrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%s is not a valid CIDR prefix (such as 10.0.0.0/8 or fd00::/8)", strconv.Quote(s))
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%s is not a valid IP address or CIDR prefix", strconv.Quote(s))
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// refuseH2C removes an "Upgrade: h2c" offer (and its HTTP2-Settings) from the
// client's headers: the gateway never switches a connection to cleartext HTTP/2,
// so the request goes on as plain HTTP/1.1 and the backend never sees the offer.
// Other upgrade tokens (websocket) are kept.
func refuseH2C(h http.Header) {
	ups, ok := h["Upgrade"]
	if !ok {
		return
	}
	found := false
	var keep []string
	for _, v := range ups {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			switch {
			case tok == "":
			case strings.EqualFold(tok, "h2c"):
				found = true
			default:
				keep = append(keep, tok)
			}
		}
	}
	if !found {
		return
	}
	h.Del("Http2-Settings")
	if len(keep) == 0 {
		h.Del("Upgrade")
		return
	}
	h["Upgrade"] = []string{strings.Join(keep, ", ")}
}
