package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	long := strings.Repeat("x", 600)
	cases := []struct {
		name, before, after, want string
	}{
		{"nothing written", "old\n", "", ""},
		{"only this run", "old run\n", "line 1\nline 2\n\n", "line 1\nline 2"},
		{"cut to whole lines", "", long + "\nend 1\nend 2\n", "end 1\nend 2"},
		{"one long line", "", long, strings.Repeat("x", maxTail)},
		{"invalid utf-8 dropped", "", "a\xffb\n", "ab"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.before+tc.after), 0o600); err != nil {
				t.Fatal(err)
			}
			got := logTail(path, int64(len(tc.before)))
			if got != tc.want {
				t.Errorf("logTail = %q, want %q", got, tc.want)
			}
			if len(got) > maxTail {
				t.Errorf("tail of %d bytes, more than %d", len(got), maxTail)
			}
		})
	}
	if got := logTail(filepath.Join(t.TempDir(), "missing"), 0); got != "" {
		t.Errorf("missing file: %q", got)
	}
	if got := withTail("exited with status 1 before it was ready", ""); got != "exited with status 1 before it was ready" {
		t.Errorf("withTail without tail: %q", got)
	}
}
