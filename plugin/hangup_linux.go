package plugin

import (
	"sync"
	"syscall"
)

// hangups is the process's epoll set of watched connections: parked ones, and
// those of requests that wait with their body unread. It reports a peer that
// closed its side (EPOLLRDHUP), reset the connection (EPOLLHUP, EPOLLERR), and
// nothing else: a pipelined request, or the rest of a body, arriving meanwhile is
// left in the socket for the server. Each registration is one-shot and carries a
// generation with the descriptor, so a late event never reaches a watch that
// reused the number.
var hangups epollSet

type epollSet struct {
	once sync.Once
	fd   int // -1 when epoll could not be set up

	mu      sync.Mutex
	gen     uint32
	watched map[int32]*watch
}

func (s *epollSet) setUp() {
	s.once.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			s.fd = -1
			return
		}
		s.fd = fd
		s.watched = make(map[int32]*watch)
		go s.loop()
	})
}

// add watches w's socket, rc, for w.owner; false means it could not (the caller
// watches otherwise, or not at all).
func (s *epollSet) add(w *watch, rc syscall.RawConn) bool {
	s.setUp()
	if s.fd < 0 {
		return false
	}
	ok := false
	err := rc.Control(func(fd uintptr) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.gen++
		w.fd, w.gen = int32(fd), s.gen
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd), Pad: int32(s.gen)}
		if syscall.EpollCtl(s.fd, syscall.EPOLL_CTL_ADD, int(fd), &ev) == nil {
			s.watched[int32(fd)] = w
			ok = true
		}
	})
	return err == nil && ok
}

// remove stops watching w's socket, rc.
func (s *epollSet) remove(w *watch, rc syscall.RawConn) {
	s.mu.Lock()
	if s.watched[w.fd] == w {
		delete(s.watched, w.fd)
	}
	s.mu.Unlock()
	if rc != nil {
		_ = rc.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(s.fd, syscall.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
}

func (s *epollSet) loop() {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(s.fd, events, -1)
		if err != nil {
			continue // EINTR
		}
		for _, ev := range events[:n] {
			s.mu.Lock()
			w := s.watched[ev.Fd]
			if w != nil && w.gen == uint32(ev.Pad) {
				delete(s.watched, ev.Fd)
			} else {
				w = nil
			}
			s.mu.Unlock()
			if w != nil {
				go w.owner.hangUp()
			}
		}
	}
}
