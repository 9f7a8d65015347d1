package docker

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/reapergw/reaper/paas/probe"
)

// Where a container's readiness is probed.
//
// A port a container publishes is served on the engine's host by the engine's
// port proxy (docker-proxy), which accepts every connection as soon as the
// container starts, then connects to the app, and closes the client's
// connection while the app does not listen yet. A TCP probe of the published
// port passes before the app listens, and the requests it releases get 502. So
// a tcp probe that names a port the container publishes is sent to the
// container's own address instead — its IP on one of its networks, and the
// container port the published one maps to — read from the engine after each
// start (the IP may change at each start); and without ready, the default probe
// is the container's own address on its first published port (or its only
// exposed one).

// netView is what inspect says of a running container's network, for its
// readiness probe.
type netView struct {
	mode      string     // HostConfig.NetworkMode: bridge, default, host, none, container:<id>, a network's name
	published []binding  // tcp ports published on the host, by container port, then host port and address
	exposed   []uint16   // tcp ports the container exposes or publishes, in order
	addrs     []endpoint // its addresses: on the network bridge first, then by network name
}

// binding is one tcp port a container publishes on its engine's host.
type binding struct {
	port     uint16     // in the container
	hostIP   netip.Addr // invalid or unspecified: every address of the host
	hostPort uint16
}

// endpoint is a container's address on one network.
type endpoint struct {
	network string
	ip      netip.Addr
}

func (n netView) equal(o netView) bool {
	return n.mode == o.mode && slices.Equal(n.published, o.published) && slices.Equal(n.exposed, o.exposed) && slices.Equal(n.addrs, o.addrs)
}

// readNet reads a container's network from its inspection. The ports are those
// of NetworkSettings.Ports: the ones in effect while it runs (an ephemeral host
// port included); a stopped container has none, and is not probed.
func readNet(c container.InspectResponse) netView {
	var n netView
	if c.HostConfig != nil {
		n.mode = string(c.HostConfig.NetworkMode)
	}
	if c.Config != nil {
		for p := range c.Config.ExposedPorts {
			if p.Proto() == network.TCP {
				n.exposed = append(n.exposed, p.Num())
			}
		}
	}
	if s := c.NetworkSettings; s != nil {
		for p, bs := range s.Ports {
			if p.Proto() != network.TCP {
				continue
			}
			n.exposed = append(n.exposed, p.Num())
			for _, b := range bs {
				hp, err := strconv.ParseUint(b.HostPort, 10, 16)
				if err != nil || hp == 0 {
					continue
				}
				n.published = append(n.published, binding{port: p.Num(), hostIP: b.HostIP.Unmap(), hostPort: uint16(hp)})
			}
		}
		for name, ep := range s.Networks {
			if ep == nil {
				continue
			}
			ip := ep.IPAddress
			if !ip.IsValid() {
				ip = ep.GlobalIPv6Address
			}
			if ip.IsValid() && !ip.IsUnspecified() {
				n.addrs = append(n.addrs, endpoint{network: name, ip: ip.Unmap()})
			}
		}
	}
	slices.Sort(n.exposed)
	n.exposed = slices.Compact(n.exposed)
	slices.SortFunc(n.published, func(a, b binding) int {
		return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.hostPort, b.hostPort), a.hostIP.Compare(b.hostIP))
	})
	slices.SortFunc(n.addrs, func(a, b endpoint) int {
		// The default bridge first: the engine's host is on it.
		if ab, bb := a.network == "bridge", b.network == "bridge"; ab != bb {
			if ab {
				return -1
			}
			return 1
		}
		return strings.Compare(a.network, b.network)
	})
	return n
}

// target is where an app's readiness is probed, for one read of its container.
type target struct {
	tcp, http string        // the probe; neither: the container's state only
	proto     *probe.Config // a postgres or redis probe, sent to tcp; nil: a connect
	own       bool          // tcp is the container's own address
	why       string        // how it was chosen, for logs
}

// stateOnly: no probe, ready once the container runs (and is healthy, when its
// image has a HEALTHCHECK).
const stateOnly = "ready once it runs (and, with a HEALTHCHECK, is healthy)"

func (t target) probes() bool { return t.tcp != "" || t.http != "" }

// String says what is probed, for logs: "tcp 172.17.0.3:8080 (…)".
func (t target) String() string {
	var s string
	switch {
	case t.proto != nil:
		s = t.proto.Kind() + " " + t.tcp
	case t.tcp != "":
		s = "tcp " + t.tcp
	case t.http != "":
		s = "http " + (&probe.Config{HTTP: t.http}).Target() // a password in the URL is masked
	default:
		return "none: " + stateOnly
	}
	if t.why != "" {
		s += " (" + t.why + ")"
	}
	return s
}

// resolveTarget says where to probe the readiness of a running container whose
// ready probe is r (nil: none), its network read as n; local says whether its
// engine runs on this machine (the addresses of a remote engine's containers
// are not reachable from here). Pure.
//
//   - http: as given (the port proxy closes a connection it cannot pass on, so
//     an HTTP probe through a published port fails until the app answers);
//   - tcp naming a port the container publishes (same port, and the host
//     address it is published on, or any when published on every address): the
//     container's own address and the container port it maps to;
//   - tcp naming anything else, or a container in the host's network
//     (network_mode host) or another container's (it has neither an address
//     nor published ports of its own), or on a remote engine, or without an
//     address: as given;
//   - no probe: the container's own address on its first published port (the
//     lowest container port), else on its only exposed port; with neither (or
//     no address, or a remote engine), the container's state only.
func resolveTarget(r *probe.Config, n netView, local bool) target {
	if r != nil && r.HTTP != "" {
		return target{http: r.HTTP}
	}
	// In the host's network (or another container's), the app listens there
	// itself: no port proxy stands in front of it.
	shared := n.mode == "host" || strings.HasPrefix(n.mode, "container:")
	if r != nil && r.Addr() != "" {
		given := target{tcp: r.Addr(), proto: protoOf(r)}
		if !local || shared || len(n.addrs) == 0 {
			return given
		}
		host, portText, err := net.SplitHostPort(r.Addr())
		port, perr := strconv.ParseUint(portText, 10, 16)
		if err != nil || perr != nil {
			return given
		}
		for _, b := range n.published {
			if b.hostPort == uint16(port) && publishedOn(b.hostIP, host) {
				ep := n.addrs[0]
				return target{tcp: joinAddr(ep.ip, b.port), proto: given.proto, own: true,
					why: fmt.Sprintf("the container's own address on network %s: %s is the port it publishes for %d", ep.network, r.Addr(), b.port)}
			}
		}
		return given
	}
	if !local || shared || len(n.addrs) == 0 {
		return target{}
	}
	ep := n.addrs[0]
	if len(n.published) > 0 {
		p := n.published[0].port
		return target{tcp: joinAddr(ep.ip, p), own: true,
			why: fmt.Sprintf("no ready: the container's own address on network %s, port %d, its first published port", ep.network, p)}
	}
	if len(n.exposed) == 1 {
		p := n.exposed[0]
		return target{tcp: joinAddr(ep.ip, p), own: true,
			why: fmt.Sprintf("no ready: the container's own address on network %s, port %d, the only port it exposes", ep.network, p)}
	}
	return target{}
}

// publishedOn reports whether a port published on hostIP is reached through
// host, an IP address or localhost: a port published on every address is
// reached through any. Another name (a network alias such as app, or a name of
// the host) is taken as given: it is not the port proxy's address.
func publishedOn(hostIP netip.Addr, host string) bool {
	if !hostIP.IsValid() || hostIP.IsUnspecified() {
		return host == "localhost" || isIP(host)
	}
	if host == "localhost" {
		return hostIP.IsLoopback()
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap() == hostIP
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func joinAddr(ip netip.Addr, port uint16) string {
	return netip.AddrPortFrom(ip, port).String()
}

// fallback is where to probe once the container's own address proved
// unreachable from reaper (reaper in another network namespace, a remote engine
// behind a forwarded socket, a rootless engine, a macvlan network): the probe
// as configured, or, without one, the container's state.
func fallback(r *probe.Config) target {
	if r == nil {
		return target{}
	}
	return target{tcp: r.Addr(), http: r.HTTP, proto: protoOf(r)}
}

// protoOf is r when it speaks a protocol (postgres, redis), else nil.
func protoOf(r *probe.Config) *probe.Config {
	if r.Postgres != "" || r.Redis != "" {
		return r
	}
	return nil
}

// localEngine reports whether an engine's address is on this machine: a unix
// socket, or tcp to a loopback address. The addresses of a remote engine's
// containers are not reachable from here.
func localEngine(host string) bool {
	scheme, rest, _ := strings.Cut(host, "://")
	switch scheme {
	case "unix", "npipe":
		return true
	case "tcp", "http", "https":
		h := rest
		if i := strings.IndexAny(h, "/"); i >= 0 {
			h = h[:i]
		}
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		if h == "localhost" {
			return true
		}
		ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
		return err == nil && ip.IsLoopback()
	}
	return false
}

// describeProbe says, without an engine, what will be probed for an app whose
// ready probe is r (nil: none) on an engine at host: for reaper check.
func describeProbe(r *probe.Config, host string) string {
	local := localEngine(host)
	switch {
	case r != nil && r.HTTP != "":
		return "http " + r.Target() + ", as given"
	case r != nil && r.Addr() != "" && !local:
		return r.Kind() + " " + r.Addr() + ", as given (the engine is on another machine: its containers' own addresses are not reachable from here)"
	case r != nil && r.Addr() != "":
		return r.Kind() + " " + r.Addr() + " → if the container publishes that port: the container's own address and the port it maps to, read at each start (the engine's port proxy accepts before the app listens); else as given"
	case !local:
		return "no ready: " + stateOnly + " (the engine is on another machine)"
	}
	return "no ready: tcp to the container's own address on its first published port (or its only exposed port), read at each start, then its HEALTHCHECK if it has one; with neither port, " + stateOnly
}

// Readiness says, for reaper check, what each start of a container app will
// probe, as far as it can be known without an engine: one line per declared
// app, then, with labels on, one for the apps discovered from them (per engine
// when there are several). lookup reads DOCKER_HOST.
func (c *Config) Readiness(lookup func(string) (string, bool)) []string {
	engines := c.engines(lookup)
	hostOf := map[string]string{}
	for _, e := range engines {
		hostOf[e.Name] = e.Host
	}
	var out []string
	for _, a := range c.Apps {
		name := cmp.Or(a.Host, engines[0].Name)
		where := "container " + a.Container
		if len(engines) > 1 {
			where += ", engine " + name
		}
		out = append(out, fmt.Sprintf("%s (%s): %s", a.ID, where, describeProbe(a.Ready, hostOf[name])))
	}
	if c.LabelsOn() {
		for _, e := range engines {
			what := "apps from labels"
			if len(engines) > 1 {
				what += " on engine " + e.Name
			}
			out = append(out, fmt.Sprintf("%s: %s or %s as above; without them, %s", what, LabelReadyTCP, LabelReadyHTTP, describeProbe(nil, e.Host)))
		}
	}
	return out
}
