// Package logbuf buffers log output so that a request's access line costs a copy,
// not a write system call: lines are gathered in memory and written together every
// flush interval, or at once when the buffer fills. Close writes what is left.
//
// A crash loses at most one interval of lines; the runtime's own crash report
// goes to stderr directly and is never buffered.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Writer is a buffered io.Writer safe for concurrent use. Each Write is kept
// whole, so lines from slog handlers never interleave.
type Writer struct {
	mu    sync.Mutex
	out   io.Writer
	buf   []byte
	limit int
	err   error

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a Writer to out that flushes every interval and whenever limit bytes
// are waiting.
func New(out io.Writer, interval time.Duration, limit int) *Writer {
	w := &Writer{out: out, buf: make([]byte, 0, limit), limit: limit, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(interval)
	return w
}

func (w *Writer) run(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.Flush()
		case <-w.stop:
			w.Flush()
			return
		}
	}
}

// Write keeps p for the next flush; if the buffer would overflow, it first writes
// what is waiting (the caller then pays the system call, which bounds memory).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf)+len(p) > w.limit {
		w.flushLocked()
		if len(p) > w.limit {
			_, err := w.out.Write(p)
			return len(p), err
		}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush writes what is waiting.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		w.err = err
	}
	return err
}

// Close stops the flusher and writes what is left. Idempotent.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
