// Package pyapp runs the app of issue 10 for the e2e tests and the bench: Python's
// http.server with one thread per connection (socketserver.ThreadingMixIn), a
// listen backlog of 5 and HTTP/1.1 keep-alive, as reaper's process driver runs it.
// The script, app.py, is embedded; Command writes it into a directory and returns
// the command line that runs it. What it answers is in its docstring.
//
// Python 3 comes from Debian's python3 package. When it is not installed, Require
// skips the test, or fails it when the environment sets REAPER_REQUIRE_PYTHON=1 (as
// CI does).
package pyapp

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

//go:embed app.py
var script []byte

// Path is where python3 is looked for first (Debian's); the PATH is searched when
// it is not there.
const Path = "/usr/bin/python3"

// RequireEnv names the environment variable that turns a missing python3 from a
// skip into a failure.
const RequireEnv = "REAPER_REQUIRE_PYTHON"

// InstallHint says how to install what the app needs.
const InstallHint = "apt-get install python3"

// Backlog is the app's listen backlog (request_queue_size in app.py).
const Backlog = 5

// ErrNoPython reports that no python3 was found.
var ErrNoPython = errors.New("pyapp: python3 not found at " + Path + " nor in PATH")

// Find returns the python3 to run the app with: Path, else python3 on the PATH.
func Find() (string, error) {
	if st, err := os.Stat(Path); err == nil && st.Mode().IsRegular() {
		return Path, nil
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p, nil
	}
	return "", ErrNoPython
}

// Require returns the python3 for a test: without one it skips the test, or fails
// it when REAPER_REQUIRE_PYTHON=1.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%v, and %s=1", err, RequireEnv)
		}
		t.Skipf("%v: install it (%s); set %s=1 to fail instead of skipping", err, InstallHint, RequireEnv)
	}
	return p
}

// App is one run of the app.
type App struct {
	Addr      string        // host:port to listen on
	Name      string        // in its answers to GET; empty: "pyapp"
	BootDelay time.Duration // how long it waits before opening its port
}

// Command writes app.py into dir (once is enough for any number of apps) and
// returns the command line that runs it with python: in isolated mode (-I), which
// ignores PYTHON* variables and the user's site packages.
func Command(python, dir string, a App) ([]string, error) {
	path := filepath.Join(dir, "pyapp.py")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		return nil, fmt.Errorf("pyapp: writing the script: %w", err)
	}
	argv := []string{python, "-I", path, "--listen", a.Addr}
	if a.Name != "" {
		argv = append(argv, "--name", a.Name)
	}
	if a.BootDelay > 0 {
		argv = append(argv, "--boot-delay", strconv.FormatFloat(a.BootDelay.Seconds(), 'f', -1, 64))
	}
	return argv, nil
}
