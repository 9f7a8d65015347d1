package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// Real partitions: each node runs in a network namespace of its own, with two
// links.
//
//   - eth0, its cluster network: a veth whose other end is a port of a bridge in a
//     "switch" namespace, where the other nodes and the services (redis-server and
//     the fake Clever Cloud, which listen in the root namespace on the switch's
//     port 10.R.0.1) also are. Raft, internal calls, the store, the platform's API
//     and the apps' edges all go over it. The bridge lives in a namespace of its
//     own so that no firewall of the machine sees the nodes' traffic, and no
//     setting of the machine changes.
//   - cl0, its clients' link: a veth straight to the root namespace, where the
//     load generator is. The gateway listens on every address of the namespace.
//
// Cutting a node off is setting its port of the bridge down: it loses its peers,
// the store and the platform (packets are dropped, connections hang as on a real
// network), and keeps its clients, as a node cut off behind a load balancer would.
// Healing sets the port up again.
//
// Everything is named after the harness's pid (rfx<pid>…), so a run that died
// without cleaning up is recognised by the next one, which removes what it left.

// netMode says whether nodes run in network namespaces, and why not.
type netMode struct {
	on     bool
	reason string // why not, when off
}

// detectNetns decides from the -netns flag, the user and the tools, probing with
// a namespace it creates and removes; it also removes what dead runs left.
func detectNetns(flag string) netMode {
	if flag == "off" {
		return netMode{reason: "-netns off"}
	}
	if os.Geteuid() != 0 {
		return netMode{reason: "network namespaces need root (run as root, or -netns off to silence this)"}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return netMode{reason: "ip is not on the PATH (apt-get install iproute2)"}
	}
	removeStaleNamespaces()
	probe := fmt.Sprintf("rfx%d-probe", os.Getpid())
	if err := ip("netns", "add", probe); err != nil {
		return netMode{reason: err.Error()}
	}
	defer func() { _ = ip("netns", "del", probe) }()
	if err := ip("-n", probe, "link", "add", "br0", "type", "bridge"); err != nil {
		return netMode{reason: err.Error()}
	}
	return netMode{on: true}
}

// ip runs ip with args and returns its error with what it said.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

var staleNamespace = regexp.MustCompile(`^rfx(\d+)-`)

// removeStaleNamespaces deletes the namespaces of runs whose process is gone
// (their veths go with them).
func removeStaleNamespaces() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for line := range strings.Lines(string(out)) {
		name := strings.Fields(line + " ")[0]
		m := staleNamespace.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = ip("netns", "del", name)
		}
	}
}

// netLayout is the namespaces and links of one world.
type netLayout struct {
	prefix string // rfx<pid>w<k>: names of namespaces and links
	sub    int    // the worlds' addresses are 10.<sub>.…
	nodes  int
}

// newNetLayout creates the switch, the services' port and nodes namespaces with
// their links; world numbers the layouts of one run, for their names. Removing
// them is pushed onto push.
func newNetLayout(world, nodes int, push func(func())) (*netLayout, error) {
	sub, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	// Link names hold 15 bytes at most: rfx, 7 digits of pid, w, 2 digits, c1.
	l := &netLayout{prefix: fmt.Sprintf("rfx%dw%d", os.Getpid(), world%100), sub: sub, nodes: nodes}
	push(l.remove)
	steps := [][]string{
		{"netns", "add", l.sw()},
		{"-n", l.sw(), "link", "set", "lo", "up"},
		{"-n", l.sw(), "link", "add", "br0", "type", "bridge"},
		{"-n", l.sw(), "link", "set", "br0", "up"},
		{"link", "add", l.link("s"), "type", "veth", "peer", "name", "svc", "netns", l.sw()},
		{"-n", l.sw(), "link", "set", "svc", "master", "br0", "up"},
		{"addr", "add", l.SharedIP() + "/24", "dev", l.link("s")},
		{"link", "set", l.link("s"), "up"},
	}
	for i := range nodes {
		steps = append(steps, l.nodeSteps(i)...)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// nodeSteps creates node i's namespace, its port of the bridge and its clients'
// link.
func (l *netLayout) nodeSteps(i int) [][]string {
	ns, port, client := l.Namespace(i), l.port(i), l.link(fmt.Sprintf("c%d", i))
	return [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", port, "netns", l.sw()},
		{"-n", l.sw(), "link", "set", port, "master", "br0", "up"},
		{"-n", ns, "addr", "add", l.NodeIP(i) + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"link", "add", client, "type", "veth", "peer", "name", "cl0", "netns", ns},
		{"addr", "add", fmt.Sprintf("10.%d.%d.1/30", l.sub, i+1), "dev", client},
		{"link", "set", client, "up"},
		{"-n", ns, "addr", "add", l.ClientIP(i) + "/30", "dev", "cl0"},
		{"-n", ns, "link", "set", "cl0", "up"},
	}
}

func (l *netLayout) sw() string              { return l.prefix + "-sw" }
func (l *netLayout) link(name string) string { return l.prefix + name }
func (l *netLayout) port(i int) string       { return l.link(fmt.Sprintf("p%d", i)) }

// Namespace is node i's namespace.
func (l *netLayout) Namespace(i int) string { return fmt.Sprintf("%s-n%d", l.prefix, i) }

// SharedIP is the services' address on the cluster network.
func (l *netLayout) SharedIP() string { return fmt.Sprintf("10.%d.0.1", l.sub) }

// NodeIP is node i's address on the cluster network (Raft, admin API).
func (l *netLayout) NodeIP(i int) string { return fmt.Sprintf("10.%d.0.%d", l.sub, 11+i) }

// ClientIP is node i's address on its clients' link.
func (l *netLayout) ClientIP(i int) string { return fmt.Sprintf("10.%d.%d.2", l.sub, i+1) }

// Cut sets node i's port of the bridge down: it loses the cluster network.
func (l *netLayout) Cut(i int) error { return ip("-n", l.sw(), "link", "set", l.port(i), "down") }

// Heal sets it up again.
func (l *netLayout) Heal(i int) error { return ip("-n", l.sw(), "link", "set", l.port(i), "up") }

// remove deletes the namespaces (and with them every link).
func (l *netLayout) remove() {
	for i := range l.nodes {
		_ = ip("netns", "del", l.Namespace(i))
	}
	_ = ip("netns", "del", l.sw())
}

// freeSubnet picks a second octet for 10.x.0.0/16 that no address of the root
// namespace uses.
func freeSubnet() (int, error) {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		return 0, fmt.Errorf("ip -4 -o addr show: %w", err)
	}
	used := string(out)
	for range 200 {
		sub := 100 + rand.IntN(150)
		if !strings.Contains(used, fmt.Sprintf(" 10.%d.", sub)) {
			return sub, nil
		}
	}
	return 0, errors.New("no free 10.x.0.0/16 subnet for the namespaces")
}
