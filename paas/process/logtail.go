package process

import (
	"bytes"
	"os"
	"strings"
)

// maxTail bounds the part of an app's log quoted in a failed start's cause.
const maxTail = 512

// logTail returns the end of what was appended to the log file at path after offset
// (its size when the process started, so an earlier run's output is never quoted):
// at most maxTail bytes, whole lines when it had to cut, trimmed. It returns "" when
// nothing was written or the file cannot be read; it is a courtesy, never an error.
func logTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	offset = max(offset, 0)
	size := fi.Size()
	if size <= offset {
		return ""
	}
	start := max(offset, size-maxTail)
	buf := make([]byte, size-start)
	n, _ := f.ReadAt(buf, start)
	buf = buf[:n]
	if start > offset {
		// Cut in the middle of a line: drop its end, unless it is all there is.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 && i < len(buf)-1 {
			buf = buf[i+1:]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(buf), ""))
}

// withTail appends the log tail to a cause.
func withTail(cause, tail string) string {
	if tail == "" {
		return cause
	}
	return cause + "; last output:\n" + tail
}
