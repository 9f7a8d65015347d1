package tcproute

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// What the kernel knows of a connection, read without taking a byte of its
// stream: a held client may have sent its first message (a Postgres startup
// packet), which must reach the app intact.

// goneEvery is how often a held client that sent bytes already is looked at:
// its socket stays readable, so the poller cannot tell when it leaves.
const goneEvery = 100 * time.Millisecond

// watchGone calls gone when the held client leaves (closes or resets its
// connection), until stop is called; stop returns once the watch is over.
// While the client has sent nothing, the runtime's poller wakes the watch the
// moment the client's FIN or first bytes arrive; once bytes wait, the watch
// reads the connection's TCP state every goneEvery.
func watchGone(c *net.TCPConn, gone func()) (stop func()) {
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		rc, err := c.SyscallConn()
		if err != nil {
			return
		}
		var left bool
		buf := make([]byte, 1)
		err = rc.Read(func(fd uintptr) bool {
			n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err == unix.EAGAIN || err == unix.EINTR {
				return false // nothing yet: wait for the poller
			}
			left = n == 0 || err != nil
			return true
		})
		if err != nil {
			return // stopped (the read deadline)
		}
		if left {
			gone()
			return
		}
		t := time.NewTicker(goneEvery)
		defer t.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-t.C:
				if peerClosed(c) {
					gone()
					return
				}
			}
		}
	}()
	return func() {
		close(stopped)
		_ = c.SetReadDeadline(time.Now()) // ends the poller's wait
		<-done
		_ = c.SetReadDeadline(time.Time{})
	}
}

// tcpInfo reads the connection's TCP_INFO.
func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, false
	}
	var (
		info *unix.TCPInfo
		ierr error
	)
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return nil, false
	}
	return info, true
}

// peerClosed reports whether the peer closed or reset the connection.
func peerClosed(c *net.TCPConn) bool {
	info, ok := tcpInfo(c)
	if !ok {
		return true // the socket is gone
	}
	switch info.State {
	case unix.BPF_TCP_CLOSE_WAIT, unix.BPF_TCP_CLOSE, unix.BPF_TCP_LAST_ACK, unix.BPF_TCP_TIME_WAIT:
		return true
	}
	return false
}

// quietFor is how long no data went either way on the connection (its last
// segment with data received or sent); false when it cannot be read.
func quietFor(c *net.TCPConn) (time.Duration, bool) {
	info, ok := tcpInfo(c)
	if !ok {
		return 0, false
	}
	ms := min(info.Last_data_recv, info.Last_data_sent)
	return time.Duration(ms) * time.Millisecond, true
}
