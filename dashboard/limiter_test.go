package dashboard

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiter_BurstThenRefill(t *testing.T) {
	l := newLimiter(3, 10*time.Second, 100)
	for i := range 3 {
		if ok, _ := l.allow("a", t0); !ok {
			t.Fatalf("attempt %d of the burst refused", i+1)
		}
	}
	ok, wait := l.allow("a", t0)
	if ok || wait <= 0 || wait > 11*time.Second {
		t.Fatalf("4th attempt: ok=%v wait=%v, want refused with a wait of about 10 s", ok, wait)
	}
	if ok, _ := l.allow("b", t0); !ok {
		t.Error("another address is limited too")
	}
	if ok, _ := l.allow("a", t0.Add(5*time.Second)); ok {
		t.Error("half a refill let an attempt through")
	}
	if ok, _ := l.allow("a", t0.Add(11*time.Second)); !ok {
		t.Error("no attempt after a whole refill")
	}
}

func TestLimiter_TableIsBounded(t *testing.T) {
	l := newLimiter(2, time.Minute, 10)
	for i := range 1000 {
		l.allow(fmt.Sprintf("10.0.%d.%d", i/256, i%256), t0.Add(time.Duration(i)*time.Millisecond))
		if n := len(l.m); n > 10 {
			t.Fatalf("after %d addresses the table holds %d, want at most 10", i+1, n)
		}
	}
	// An address that used its attempts and is still in the table stays limited.
	l = newLimiter(1, time.Hour, 10)
	l.allow("attacker", t0)
	for i := range 5 {
		l.allow(fmt.Sprintf("other-%d", i), t0)
	}
	if ok, _ := l.allow("attacker", t0.Add(time.Second)); ok {
		t.Error("an exhausted address got an attempt back while the table had room")
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:5123":                     "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":         "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:1]:80": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:80":              "192.0.2.7",
		"not-an-address":                     "not-an-address",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}
