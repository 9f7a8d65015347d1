package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// sockets are listening sockets handed over by the service manager (systemd's
// socket activation: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES, descriptors from 3).
// The service manager keeps them open while reaper restarts, so connections that
// arrive during an upgrade wait in the kernel's queue instead of being refused.
type sockets map[string]net.Listener

// The names a socket unit gives its sockets (FileDescriptorName=), by listener.
const (
	socketGateway = "gateway" // node.listen
	socketAdmin   = "admin"   // node.admin_listen
	socketHTTP    = "http"    // node.tls.acme.http_listen
)

// firstInheritedFD is the first descriptor of the protocol (SD_LISTEN_FDS_START).
const firstInheritedFD = 3

// inheritedSockets takes the sockets passed to this process, if any. Only the
// process named by LISTEN_PID takes them (the variables may have been inherited by
// mistake from a parent). Each must be named gateway, admin or http; a single unnamed
// socket is the gateway. The descriptors are closed once wrapped (the listeners
// hold their own, closed on exec), so apps started later inherit none of them.
func inheritedSockets(env func(string) (string, bool), pid int) (sockets, error) {
	pidText, _ := env("LISTEN_PID")
	fdsText, ok := env("LISTEN_FDS")
	if !ok || strings.TrimSpace(pidText) != strconv.Itoa(pid) {
		return nil, nil
	}
	count, err := strconv.Atoi(strings.TrimSpace(fdsText))
	if err != nil || count < 0 {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS=%q is not a count of sockets", fdsText)
	}
	names, err := socketNames(env, count)
	if err != nil {
		return nil, err
	}
	out := sockets{}
	for i, name := range names {
		f := os.NewFile(uintptr(firstInheritedFD+i), name)
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			out.close()
			return nil, fmt.Errorf("socket activation: descriptor %d (%s) is not a listening TCP socket: %w", firstInheritedFD+i, name, err)
		}
		if out[name] != nil {
			out.close()
			return nil, fmt.Errorf("socket activation: two sockets are named %q", name)
		}
		out[name] = ln
	}
	return out, nil
}

// socketNames reads LISTEN_FDNAMES: one name per socket, each gateway, admin or http. A
// lone socket without one of those names (systemd names it after its unit by
// default) is the gateway.
func socketNames(env func(string) (string, bool), count int) ([]string, error) {
	text, _ := env("LISTEN_FDNAMES")
	names := strings.Split(text, ":")
	if text == "" {
		names = nil
	}
	if count == 1 && (len(names) != 1 || !knownSocket(names[0])) {
		return []string{socketGateway}, nil
	}
	if len(names) != count {
		return nil, fmt.Errorf("socket activation: %d sockets but LISTEN_FDNAMES names %d; name each gateway, admin or http (FileDescriptorName=)", count, len(names))
	}
	for _, n := range names {
		if !knownSocket(n) {
			return nil, fmt.Errorf("socket activation: a socket is named %q; name each gateway, admin or http (FileDescriptorName=)", n)
		}
	}
	return names, nil
}

func knownSocket(name string) bool {
	return name == socketGateway || name == socketAdmin || name == socketHTTP
}

// listen returns the inherited socket of that name, or a new one on addr.
func (s sockets) listen(name, addr string) (net.Listener, bool, error) {
	if ln := s[name]; ln != nil {
		delete(s, name)
		return ln, true, nil
	}
	ln, err := net.Listen("tcp", addr)
	return ln, false, err
}

// close closes the sockets not taken.
func (s sockets) close() {
	for name, ln := range s {
		ln.Close()
		delete(s, name)
	}
}
