package dashboard

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Sign-in attempts are limited per client address: a bucket of loginBurst
// attempts that refills one every loginRefill. The table is bounded: past
// limiterCap addresses, full buckets (addresses that stopped trying) go first,
// then the least recently seen, so a crowd of addresses costs bounded memory and
// can only win back the attempts an idle address would have had anyway.
const (
	loginBurst  = 5
	loginRefill = 12 * time.Second
	limiterCap  = 4096
)

type bucket struct {
	tokens  float64
	counted time.Time // tokens are counted up to this time
	seen    time.Time // the last attempt
}

// limiter is a bounded table of token buckets. Safe for concurrent use.
type limiter struct {
	burst  float64
	refill time.Duration
	cap    int

	mu sync.Mutex
	m  map[string]*bucket
}

func newLimiter(burst int, refill time.Duration, capacity int) *limiter {
	return &limiter{burst: float64(burst), refill: refill, cap: capacity, m: map[string]*bucket{}}
}

// allow takes one attempt from key's bucket at now. When none is left it
// returns false and how long until the next one.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[key]
	if !ok {
		if len(l.m) >= l.cap {
			l.evict(now)
		}
		b = &bucket{tokens: l.burst, counted: now}
		l.m[key] = b
	}
	l.fill(b, now)
	b.seen = now
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) * float64(l.refill))
		return false, wait.Round(time.Second) + time.Second
	}
	b.tokens--
	return true, 0
}

func (l *limiter) fill(b *bucket, now time.Time) {
	if el := now.Sub(b.counted); el > 0 {
		b.tokens = min(l.burst, b.tokens+float64(el)/float64(l.refill))
		b.counted = now
	}
}

// evict makes room: every full bucket goes (a fresh one is the same), and if
// none was full, the least recently seen.
func (l *limiter) evict(now time.Time) {
	var oldest string
	var oldestSeen time.Time
	for k, b := range l.m {
		l.fill(b, now)
		if b.tokens >= l.burst {
			delete(l.m, k)
			continue
		}
		if oldest == "" || b.seen.Before(oldestSeen) {
			oldest, oldestSeen = k, b.seen
		}
	}
	if len(l.m) >= l.cap && oldest != "" {
		delete(l.m, oldest)
	}
}

// clientKey is the rate-limiting key of a remote address: the IP, or its /64
// for IPv6 (one host usually holds a whole /64).
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
