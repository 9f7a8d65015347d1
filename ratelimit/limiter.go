// Package ratelimit bounds what one client may do in a while: token buckets
// keyed by client (Key: an IPv4 address, or an IPv6 /64) in a table of bounded
// size, and, on top of them, Failures, the budget of failed attempts that the
// admin doors share and log. Decisions take the time as an argument, so that
// they are tested without a clock.
package ratelimit

import (
	"container/list"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Limiter is a bounded table of token buckets, one per key: a bucket holds up
// to burst tokens and gains one every refill. Past capacity keys, the least
// recently seen key is forgotten (a forgotten key starts again with a full
// bucket), so a crowd of addresses costs bounded memory and wins back at most
// what an idle address would have had anyway. Safe for concurrent use.
type Limiter struct {
	burst  float64
	refill time.Duration
	cap    int

	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List // of *bucket, the most recently seen first
}

type bucket struct {
	key     string
	tokens  float64
	counted time.Time // tokens are counted up to this time
}

// New returns a Limiter of burst tokens per key, one more every refill, for at
// most capacity keys. burst, refill and capacity must be positive.
func New(burst int, refill time.Duration, capacity int) *Limiter {
	if burst <= 0 || refill <= 0 || capacity <= 0 {
		panic("ratelimit: New needs a positive burst, refill and capacity")
	}
	return &Limiter{burst: float64(burst), refill: refill, cap: capacity, m: map[string]*list.Element{}}
}

// PerMinute returns a Limiter of n tokens per key that refill evenly over a
// minute (one every minute/n): n per minute, in a burst if the client likes.
func PerMinute(n, capacity int) *Limiter {
	return New(n, time.Minute/time.Duration(n), capacity)
}

// Allow takes one token from key's bucket at now. When none is left it takes
// nothing and returns false and how long until the next token (rounded up to
// a whole second, as Retry-After says it).
func (l *Limiter) Allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.get(key, now)
	if b.tokens < 1 {
		return false, l.wait(b)
	}
	b.tokens--
	return true, 0
}

// Wait returns how long key must wait at now for its next token: 0 when it
// has one. It takes nothing.
func (l *Limiter) Wait(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	if !ok {
		return 0
	}
	b := e.Value.(*bucket)
	l.fill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return l.wait(b)
}

// Len returns how many keys the table holds.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// get returns key's bucket, filled up to now and moved to the front; a new
// one, full, when the key is not in the table (making room for it first).
func (l *Limiter) get(key string, now time.Time) *bucket {
	if e, ok := l.m[key]; ok {
		l.lru.MoveToFront(e)
		b := e.Value.(*bucket)
		l.fill(b, now)
		return b
	}
	if len(l.m) >= l.cap {
		last := l.lru.Back()
		l.lru.Remove(last)
		delete(l.m, last.Value.(*bucket).key)
	}
	b := &bucket{key: key, tokens: l.burst, counted: now}
	l.m[key] = l.lru.PushFront(b)
	return b
}

func (l *Limiter) fill(b *bucket, now time.Time) {
	if el := now.Sub(b.counted); el > 0 {
		b.tokens = min(l.burst, b.tokens+float64(el)/float64(l.refill))
		b.counted = now
	}
}

// wait is how long until b has a whole token, rounded up to a whole second.
func (l *Limiter) wait(b *bucket) time.Duration {
	d := time.Duration((1 - b.tokens) * float64(l.refill))
	return (d + time.Second - 1).Truncate(time.Second)
}

// Key is the rate-limiting key of a client address: the address, or its /64
// for IPv6 (one host, or one customer of a provider, usually holds a whole
// /64, and can pick a new address in it for every request). An IPv4 address
// mapped in IPv6 is the IPv4 address.
func Key(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// KeyOf is Key of a host:port (or bare host) address, such as a request's
// RemoteAddr; a host that is not an address is its own key.
func KeyOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return Key(ip)
}
