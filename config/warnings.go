package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// minAdminToken is the length under which an admin token draws a warning.
const minAdminToken = 16

// Warnings are what is allowed in the file but leaves a door open: `reaper
// check` prints them and `reaper serve` logs them at start. Each begins with
// the field's path. They never show a secret, only its length.
func (c *Config) Warnings() []string {
	out := c.busyWarnings()
	n := &c.Node
	if !n.AdminToken.IsSet() {
		return out
	}
	if l := len([]rune(n.AdminToken.Reveal())); l < minAdminToken {
		out = append(out, fmt.Sprintf("node.admin_token: is %d characters long; use at least %d random ones "+
			"(whoever reaches the admin listener, or a route's preview, can guess at it, 5 tries a minute per address)", l, minAdminToken))
	}
	if n.AdminListen != "" && !LoopbackAddr(n.AdminListen) && (c.Cluster == nil || c.Cluster.TLS == nil) {
		out = append(out, fmt.Sprintf("node.admin_listen: %s is reachable from other machines and serves plain HTTP "+
			"(it has HTTPS only with cluster.tls): the admin token and the dashboard's session cookie cross the network "+
			"readable; listen on 127.0.0.1 behind a proxy that speaks TLS, or set cluster.tls", strconv.Quote(n.AdminListen)))
	}
	return out
}

// LoopbackAddr reports whether addr (host:port) listens on a loopback address
// only: an empty or unspecified host listens on every address, and a host
// name other than localhost may resolve anywhere.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
