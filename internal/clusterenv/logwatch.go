package clusterenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// LogWatch keeps what a process writes, line by line, and lets the caller wait
// for a line. Reaper's access lines (one per request) are counted, not kept; the other
// lines are kept up to maxKeptLines.
type LogWatch struct {
	mu      sync.Mutex
	lines   []string
	dropped int
	access  int64
	changed chan struct{} // closed and replaced when a line is kept
	closed  bool          // the writer has finished
}

const maxKeptLines = 20000

// accessMarker identifies reaper's JSON access lines.
var accessMarker = []byte(`"msg":"access"`)

// NewLogWatch returns an empty LogWatch; ReadLines fills it.
func NewLogWatch() *LogWatch { return &LogWatch{changed: make(chan struct{})} }

// ReadLines reads r to its end. Lines too long for the buffer are cut, never
// blocking the writer.
func (w *LogWatch) ReadLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			w.add(bytes.TrimRight(line, "\r\n"))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// The rest of an over-long line: read it and drop it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	w.mu.Lock()
	w.closed = true
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func (w *LogWatch) add(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(line, accessMarker) {
		w.access++
		return
	}
	if len(w.lines) >= maxKeptLines {
		w.dropped++
		return
	}
	w.lines = append(w.lines, string(line))
	close(w.changed)
	w.changed = make(chan struct{})
}

// AccessLines returns how many access lines were seen.
func (w *LogWatch) AccessLines() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.access
}

// Snapshot returns the kept lines.
func (w *LogWatch) Snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// Tail returns the last n kept lines, one per line.
func (w *LogWatch) Tail(n int) string {
	lines := w.Snapshot()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// WaitFor returns the first kept line for which match is true, waiting for it up
// to timeout. It fails when ctx ends, the timeout passes, or the writer finishes
// without such a line.
func (w *LogWatch) WaitFor(ctx context.Context, timeout time.Duration, match func(string) bool) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		w.mu.Lock()
		lines, changed, closed := w.lines[seen:], w.changed, w.closed
		w.mu.Unlock()
		for _, l := range lines {
			if match(l) {
				return l, nil
			}
		}
		seen += len(lines)
		if closed {
			return "", errors.New("the log ended first")
		}
		select {
		case <-changed:
		case <-deadline.C:
			return "", fmt.Errorf("not within %s", timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// JSONLine is the part of a reaper JSON log line that callers read.
type JSONLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Addr  string `json:"addr"`
	App   string `json:"app"`
}

// ParseJSONLine parses one JSON log line; ok is false for any other line.
func ParseJSONLine(line string) (JSONLine, bool) {
	var l JSONLine
	if json.Unmarshal([]byte(line), &l) != nil {
		return JSONLine{}, false
	}
	return l, true
}

// CountMsg returns how many kept JSON lines carry msg (and app, when not empty).
func (w *LogWatch) CountMsg(msg, app string) int {
	n := 0
	for _, line := range w.Snapshot() {
		if l, ok := ParseJSONLine(line); ok && l.Msg == msg && (app == "" || l.App == app) {
			n++
		}
	}
	return n
}

// Problems returns the kept JSON lines at level WARN or ERROR.
func (w *LogWatch) Problems() []string {
	var out []string
	for _, line := range w.Snapshot() {
		if l, ok := ParseJSONLine(line); ok && (l.Level == "WARN" || l.Level == "ERROR") {
			out = append(out, line)
		}
	}
	return out
}
