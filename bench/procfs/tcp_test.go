package procfs

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

func TestProcAddr(t *testing.T) {
	if got := procAddr(netip.MustParseAddrPort("127.0.0.1:8080")); got != "0100007F:1F90" {
		t.Errorf("procAddr = %q, want 0100007F:1F90", got)
	}
}

func TestParseTCP(t *testing.T) {
	const in = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000002 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C000 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:C001 01 00000000:0000004E 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
   3: 0100007F:C000 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4 30 10 -1
   4: 0100007F:1F91 0100007F:C002 01 00000000:00000010 00:00000000 00000000     0        0 5 1 0 20 4 30 10 -1
   5: 0200007F:1F90 0100007F:C003 01 00000000:00000010 00:00000000 00000000     0        0 6 1 0 20 4 30 10 -1
   6: 0100007F:1F90 0100007F:C004 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0
`
	got, err := parseTCP(strings.NewReader(in), netip.MustParseAddrPort("127.0.0.1:8080"))
	// Lines 3 (the client's end), 4 (another port) and 5 (another address) are
	// not the server's connections; 6 is a closed one.
	want := ServerSockets{Established: 2, Unread: 1, AcceptQueue: 2, Listening: true, TimeWait: 1}
	if err != nil || got != want {
		t.Fatalf("parseTCP = %+v, %v; want %+v", got, err, want)
	}
	if got.Settled() {
		t.Error("Settled with unread bytes and a non-empty accept queue")
	}
	if !(ServerSockets{Established: 5, Listening: true}).Settled() {
		t.Error("not Settled with everything read")
	}
	if _, err := parseTCP(strings.NewReader("head\n 0: 0100007F:1F90\n"), netip.MustParseAddrPort("127.0.0.1:8080")); !errors.Is(err, ErrProc) {
		t.Errorf("short line: err = %v", err)
	}
}

// TestReadServerSockets_SeesQueuedAndUnreadConnections plays a server that is slow
// to accept and to read, as reaper is while ten thousand clients connect.
func TestReadServerSockets_SeesQueuedAndUnreadConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := netip.MustParseAddrPort(ln.Addr().String())
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if _, err := io.WriteString(clients[0], "GET / HTTP/1.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, addr, func(s ServerSockets) bool {
		return s == ServerSockets{Established: 3, Unread: 1, AcceptQueue: 3, Listening: true}
	})

	var servers []net.Conn
	defer func() {
		for _, c := range servers {
			c.Close()
		}
	}()
	for range 3 {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, c)
	}
	waitFor(t, addr, func(s ServerSockets) bool { return s.AcceptQueue == 0 && s.Unread == 1 && !s.Settled() })
	// Read what the client sent, on whichever accepted connection got it.
	for _, c := range servers {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		io.ReadAll(c)
	}
	waitFor(t, addr, func(s ServerSockets) bool { return s.Established == 3 && s.Settled() })

	if _, err := ReadServerSockets(netip.MustParseAddrPort("[::1]:80")); !errors.Is(err, ErrProc) {
		t.Errorf("IPv6: err = %v, want ErrProc", err)
	}
}

// waitFor reads the sockets of addr until ok holds, and fails the test with the
// last read after 5 s.
func waitFor(t *testing.T, addr netip.AddrPort, ok func(ServerSockets) bool) {
	t.Helper()
	var s ServerSockets
	if !testwait.Until(5*time.Second, func() bool {
		var err error
		if s, err = ReadServerSockets(addr); err != nil {
			t.Fatal(err)
		}
		return ok(s)
	}) {
		t.Fatalf("sockets still %+v after 5s", s)
	}
}
