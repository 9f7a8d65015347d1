package ratelimit

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestLimiter_BurstThenRefill(t *testing.T) {
	l := New(3, 10*time.Second, 100)
	for i := range 3 {
		if ok, _ := l.Allow("a", t0); !ok {
			t.Fatalf("attempt %d of the burst refused", i+1)
		}
	}
	ok, wait := l.Allow("a", t0)
	if ok || wait != 10*time.Second {
		t.Fatalf("4th attempt: ok=%v wait=%v, want refused with a wait of 10 s", ok, wait)
	}
	if w := l.Wait("a", t0.Add(2500*time.Millisecond)); w != 8*time.Second {
		t.Errorf("Wait 2.5 s later = %v, want 8 s (7.5 s rounded up)", w)
	}
	if ok, _ := l.Allow("b", t0); !ok {
		t.Error("another key is limited too")
	}
	if ok, _ := l.Allow("a", t0.Add(5*time.Second)); ok {
		t.Error("half a refill let an attempt through")
	}
	if w := l.Wait("a", t0.Add(10*time.Second)); w != 0 {
		t.Errorf("Wait after a whole refill = %v, want 0", w)
	}
	if ok, _ := l.Allow("a", t0.Add(10*time.Second)); !ok {
		t.Error("no attempt after a whole refill")
	}
	if w := l.Wait("never-seen", t0); w != 0 || l.Len() != 2 {
		t.Errorf("Wait of an unknown key = %v (table %d), want 0 and nothing added", w, l.Len())
	}
}

func TestLimiter_PerMinute(t *testing.T) {
	l := PerMinute(30, 10)
	for i := range 30 {
		if ok, _ := l.Allow("c", t0); !ok {
			t.Fatalf("wake %d of 30 refused", i+1)
		}
	}
	if ok, wait := l.Allow("c", t0); ok || wait != 2*time.Second {
		t.Fatalf("31st: ok=%v wait=%v, want refused for 2 s (30 a minute refill one every 2 s)", ok, wait)
	}
	if ok, _ := l.Allow("c", t0.Add(2*time.Second)); !ok {
		t.Error("refused 2 s later")
	}
}

func TestLimiter_TableIsBoundedLeastRecentlySeenGoes(t *testing.T) {
	l := New(2, time.Minute, 10)
	for i := range 1000 {
		l.Allow(fmt.Sprintf("10.0.%d.%d", i/256, i%256), t0.Add(time.Duration(i)*time.Millisecond))
		if n := l.Len(); n > 10 {
			t.Fatalf("after %d keys the table holds %d, want at most 10", i+1, n)
		}
	}
	// An exhausted key that keeps trying stays at the front: nine others
	// arriving do not push it out.
	l = New(1, time.Hour, 10)
	l.Allow("attacker", t0)
	for i := range 30 {
		l.Allow(fmt.Sprintf("other-%d", i), t0)
		if ok, _ := l.Allow("attacker", t0); ok {
			t.Fatalf("the exhausted key got an attempt back after %d others", i+1)
		}
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:5123":                     "192.0.2.7",
		"192.0.2.7":                          "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":         "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:1]:80": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":                  "fe80::/64",
		"[::ffff:192.0.2.7]:80":              "192.0.2.7",
		"not-an-address":                     "not-an-address",
	} {
		if got := KeyOf(in); got != want {
			t.Errorf("KeyOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Key(netip.MustParseAddr("2001:db8::1")); got != "2001:db8::/64" {
		t.Errorf("Key(2001:db8::1) = %q", got)
	}
}
