package logtest

import (
	"log/slog"
	"sync"
	"testing"
)

func TestBuffer(t *testing.T) {
	var b Buffer
	l := b.Logger(slog.LevelInfo)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); l.Info("hello", "i", i, "kind", "a") }()
	}
	wg.Wait()
	l.Debug("hidden")
	l.Warn("hello", "kind", "b")
	if n := b.Lines("hello", "kind=a"); n != 50 {
		t.Errorf("lines with hello and kind=a: %d, want 50", n)
	}
	if n := b.Lines("hidden"); n != 0 {
		t.Errorf("a debug line was written at info level")
	}
	if n := b.Lines("hello"); n != 51 {
		t.Errorf("lines with hello: %d, want 51", n)
	}
}
