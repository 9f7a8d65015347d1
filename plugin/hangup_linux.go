package plugin

import (
	"sync"
	"syscall"
)

// hangups is the process's epoll set of parked connections. It reports a peer
// that closed its side (EPOLLRDHUP), reset the connection (EPOLLHUP, EPOLLERR),
// and nothing else: a pipelined request arriving meanwhile is left in the socket
// for the server. Each registration is one-shot and carries a generation with the
// descriptor, so a late event never reaches a request that reused the number.
var hangups epollSet

type epollSet struct {
	once sync.Once
	fd   int // -1 when epoll could not be set up

	mu     sync.Mutex
	gen    uint32
	parked map[int32]*Parked
}

func (s *epollSet) setUp() {
	s.once.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			s.fd = -1
			return
		}
		s.fd = fd
		s.parked = make(map[int32]*Parked)
		go s.loop()
	})
}

// add watches p's socket; false means it could not (the caller watches otherwise).
func (s *epollSet) add(p *Parked, rc syscall.RawConn) bool {
	s.setUp()
	if s.fd < 0 {
		return false
	}
	ok := false
	err := rc.Control(func(fd uintptr) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.gen++
		p.w.fd, p.w.gen = int32(fd), s.gen
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd), Pad: int32(s.gen)}
		if syscall.EpollCtl(s.fd, syscall.EPOLL_CTL_ADD, int(fd), &ev) == nil {
			s.parked[int32(fd)] = p
			ok = true
		}
	})
	return err == nil && ok
}

// remove stops watching p's socket.
func (s *epollSet) remove(p *Parked, rc syscall.RawConn) {
	s.mu.Lock()
	if s.parked[p.w.fd] == p {
		delete(s.parked, p.w.fd)
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
			p := s.parked[ev.Fd]
			if p != nil && p.w.gen == uint32(ev.Pad) {
				delete(s.parked, ev.Fd)
			} else {
				p = nil
			}
			s.mu.Unlock()
			if p != nil {
				go p.hangUp()
			}
		}
	}
}
