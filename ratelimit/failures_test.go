package ratelimit

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/logtest"
)

func TestFailures_SharedBudgetCountsOnlyFailures(t *testing.T) {
	f := NewFailures(3, 20*time.Second, 100, nil)
	for range 3 {
		if _, limited := f.Limited("198.51.100.1", "token", t0); limited {
			t.Fatal("limited before its failures were used")
		}
		f.Failed("198.51.100.1", "token", t0)
	}
	// The budget is the client's, whichever door it tries next.
	for _, door := range []string{"token", "sign-in", "preview"} {
		wait, limited := f.Limited("198.51.100.1", door, t0.Add(time.Second))
		if !limited || wait != 19*time.Second {
			t.Errorf("%s after 3 failures: limited=%v wait=%v, want limited for 19 s", door, limited, wait)
		}
	}
	if _, limited := f.Limited("198.51.100.2", "token", t0); limited {
		t.Error("another client is limited too")
	}
	// Looking is not failing: a client that only ever passes is never limited.
	for range 1000 {
		if _, limited := f.Limited("198.51.100.3", "token", t0); limited {
			t.Fatal("a client with no failure was limited")
		}
	}
	if _, limited := f.Limited("198.51.100.1", "token", t0.Add(20*time.Second)); limited {
		t.Error("still limited once a failure refilled")
	}
}

func TestFailures_LogAtMostOnceAMinuteWithTheCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logtest.Buffer
		f := NewFailures(5, 12*time.Second, 100, buf.Logger(slog.LevelInfo))
		const client = "203.0.113.9"
		// 50 tries in 2.5 s: 5 fail (the burst), 45 are refused.
		for i := range 50 {
			now := time.Now()
			if _, limited := f.Limited(client, "token", now); !limited {
				f.Failed(client, "token", now)
			}
			if i == 0 {
				if n := buf.Lines("failed attempts at the admin token", "client="+client, "failed=1 refused=0"); n != 1 {
					t.Fatalf("the first failure is not logged at once:\n%s", buf.String())
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := buf.Lines("client=" + client); n != 1 {
			t.Fatalf("%d lines within the first minute, want 1:\n%s", n, buf.String())
		}
		// The rest is logged once the minute is over, with its count, though
		// the client went quiet.
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := buf.Lines("client="+client, "door=token", "failed=4 refused=45", "since=1m0s"); n != 1 {
			t.Fatalf("no line with the minute's count:\n%s", buf.String())
		}
		// Nothing more to say: no more lines, and the client is forgotten.
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if n := strings.Count(buf.String(), "\n"); n != 2 {
			t.Errorf("%d lines in all, want 2:\n%s", n, buf.String())
		}
		f.Failed(client, "sign-in", time.Now())
		if n := buf.Lines("client="+client, "door=sign-in", "failed=1 refused=0"); n != 1 {
			t.Errorf("a failure after a quiet spell is not logged at once:\n%s", buf.String())
		}
	})
}

func TestFailures_TallyTableIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logtest.Buffer
		f := NewFailures(1, time.Minute, 10, buf.Logger(slog.LevelInfo))
		for i := range 100 {
			f.Failed("10.0.0."+string(rune('a'+i%26))+strings.Repeat("x", i/26), "token", time.Now())
			f.mu.Lock()
			n := len(f.pending)
			f.mu.Unlock()
			if n > 10 {
				t.Fatalf("%d tallies after %d clients, want at most 10", n, i+1)
			}
		}
		if n := buf.Lines("failed attempts"); n != 100 {
			t.Errorf("%d lines for 100 clients' first failures, want 100", n)
		}
	})
}
