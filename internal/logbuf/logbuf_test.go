package logbuf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type countingWriter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.b.Write(p)
}

func (c *countingWriter) state() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String(), c.writes
}

func TestWriter_GathersLinesUntilTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &countingWriter{}
		w := New(out, 100*time.Millisecond, 1<<16)
		for i := range 100 {
			w.Write([]byte("line " + string(rune('a'+i%26)) + "\n"))
		}
		if s, n := out.state(); n != 0 || s != "" {
			t.Fatalf("written before the interval: %d writes", n)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		s, n := out.state()
		if n != 1 || strings.Count(s, "\n") != 100 {
			t.Errorf("after the interval: %d writes, %d lines; want 1 write of 100 lines", n, strings.Count(s, "\n"))
		}
		w.Close()
	})
}

func TestWriter_FullBufferIsWrittenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &countingWriter{}
		w := New(out, time.Hour, 64)
		w.Write(bytes.Repeat([]byte("x"), 40))
		w.Write(bytes.Repeat([]byte("y"), 40)) // would overflow: the x's go first
		if s, n := out.state(); n != 1 || s != strings.Repeat("x", 40) {
			t.Fatalf("got %d writes %q", n, s)
		}
		w.Write(bytes.Repeat([]byte("z"), 100)) // larger than the buffer: straight through
		if s, _ := out.state(); !strings.HasSuffix(s, strings.Repeat("y", 40)+strings.Repeat("z", 100)) {
			t.Errorf("order lost: %q", s)
		}
		w.Close()
	})
}

func TestWriter_CloseWritesWhatIsLeft(t *testing.T) {
	out := &countingWriter{}
	w := New(out, time.Hour, 1<<16)
	w.Write([]byte("last words\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s, _ := out.state(); s != "last words\n" {
		t.Errorf("after Close: %q", s)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
