package procfs

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// TCP socket states of /proc/net/tcp (include/net/tcp_states.h).
const (
	stateEstablished = 0x01
	stateTimeWait    = 0x06
	stateListen      = 0x0A
)

// ServerSockets describes the IPv4 sockets whose local address is the server's.
type ServerSockets struct {
	// Established counts the connections to the port: accepted by the server or
	// still in its accept queue.
	Established int
	// Unread counts those of them with bytes received that the server has not
	// read yet.
	Unread int
	// AcceptQueue is the number of connections waiting to be accepted (the
	// listening socket's receive queue).
	AcceptQueue int
	// Listening reports whether a listening socket was found on the port.
	Listening bool
	// TimeWait counts the closed connections to or from the address still in
	// TIME_WAIT (for a minute): a client or proxy that opened a connection per
	// request leaves thousands.
	TimeWait int
}

// Settled reports whether the server has accepted every connection to the port
// and read every byte sent on them.
func (s ServerSockets) Settled() bool { return s.Listening && s.AcceptQueue == 0 && s.Unread == 0 }

// ReadServerSockets reads /proc/net/tcp (this network namespace) for the sockets
// whose local address is addr, an IPv4 address and port. Reading it costs a few
// milliseconds per ten thousand sockets.
func ReadServerSockets(addr netip.AddrPort) (ServerSockets, error) {
	if !addr.Addr().Is4() {
		return ServerSockets{}, fmt.Errorf("%w: %s is not an IPv4 address", ErrProc, addr)
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ServerSockets{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	defer f.Close()
	return parseTCP(f, addr)
}

// procAddr writes addr as /proc/net/tcp does: the four bytes of the address as one
// native-endian (little-endian here) 32-bit hex number, then the port.
func procAddr(addr netip.AddrPort) string {
	a := addr.Addr().As4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], addr.Port())
}

// parseTCP reads lines like
//
//	sl  local_address rem_address   st tx_queue:rx_queue tr tm->when retrnsmt ...
//	 0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 ...
func parseTCP(r io.Reader, addr netip.AddrPort) (ServerSockets, error) {
	var s ServerSockets
	want := procAddr(addr)
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header line
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			return ServerSockets{}, fmt.Errorf("%w: /proc/net/tcp line %q", ErrProc, sc.Text())
		}
		local, remote := f[1] == want, f[2] == want
		if !local && !remote {
			continue
		}
		st, err1 := strconv.ParseUint(f[3], 16, 8)
		_, rxText, ok := strings.Cut(f[4], ":")
		rx, err2 := strconv.ParseUint(rxText, 16, 64)
		if err1 != nil || err2 != nil || !ok {
			return ServerSockets{}, fmt.Errorf("%w: /proc/net/tcp line %q", ErrProc, sc.Text())
		}
		switch {
		case st == stateTimeWait:
			s.TimeWait++
		case !local:
			// The client's end of a connection to the address.
		case st == stateListen:
			s.Listening = true
			s.AcceptQueue += int(rx)
		case st == stateEstablished:
			s.Established++
			if rx > 0 {
				s.Unread++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return ServerSockets{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return s, nil
}
