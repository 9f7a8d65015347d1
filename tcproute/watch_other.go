//go:build !linux

package tcproute

import (
	"net"
	"time"
)

// Without Linux's TCP_INFO and MSG_PEEK, a held client that leaves is noticed
// when the app is dialled, and quiet connections are not reaped.

func watchGone(*net.TCPConn, func()) (stop func()) { return func() {} }

func peerClosed(*net.TCPConn) bool { return false }

func quietFor(*net.TCPConn) (time.Duration, bool) { return 0, false }
