//go:build unix

package plugin

import (
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// reservedPort returns a loopback address where nothing listens yet: the socket is
// bound but not listening, so connections are refused, and no other process can
// take the port in the meantime (as it could after closing a listener). listen
// starts listening on it; call it at most once.
func reservedPort(t testing.TB) (addr string, listen func() net.Listener) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	var once sync.Once
	closeFD := func() { once.Do(func() { syscall.Close(fd) }) }
	t.Cleanup(closeFD)
	listen = func() net.Listener {
		if err := syscall.Listen(fd, 128); err != nil {
			t.Errorf("listen: %v", err)
			return nil
		}
		f := os.NewFile(uintptr(fd), "reserved")
		l, err := net.FileListener(f) // a duplicate of fd
		once.Do(func() { f.Close() })
		if err != nil {
			t.Errorf("listener: %v", err)
			return nil
		}
		return l
	}
	return "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port), listen
}
