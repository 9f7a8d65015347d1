package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/user"
	"strings"
	"time"

	"github.com/reapergw/reaper/adminapi"
)

// The admin commands (apps, app, wake, sleep, hold, release, reset, history,
// events, savings) call a node's admin API and print its answers: tables for
// people, the API's own JSON with --json for scripts.

// Exit statuses of the admin commands, as exitStatuses documents them.
const (
	exitRefused     = 1 // the API refused the call (a 4xx other than 404 and 409)
	exitUsage       = 2 // the command line is wrong
	exitUnreachable = 3 // the admin API cannot be reached, or failed (5xx)
	exitNotFound    = 4 // 404: no such app
	exitConflict    = 5 // 409: the app's state refuses the action
	exitTimeout     = 6 // wake --wait: the app was not Up in time
	exitAppError    = 7 // wake --wait: the app is in Error
)

const exitStatuses = `Exit status:
  0  done
  1  the admin API refused the call (its error is printed on stderr), e.g. a wrong token
  2  usage error
  3  the admin API cannot be reached, or failed (5xx)
  4  not found (404): no such app
  5  conflict (409): the app's state refuses the action, e.g. sleep; the reason is printed
  6  wake --wait: the app was not Up before --timeout
  7  wake --wait: the app is in Error
`

const adminHelp = `The admin API's URL and token each come from the first of: --admin and --token;
--config FILE, a node's configuration (node.admin_listen, node.admin_token, and
cluster.tls.ca for HTTPS); $REAPER_ADMIN_URL and $REAPER_ADMIN_TOKEN. The URL
defaults to ` + defaultAdmin + `. Prefer $REAPER_ADMIN_TOKEN to --token: a
command's options are visible to other users of the machine.
`

// cli is one run of an admin command.
type cli struct {
	prog   string // "reaper apps", for messages
	target *adminTarget
	admin  adminClient
	api    *adminapi.Client // admin's
	json   bool
	by     string // who does an action, for the app's history
	env    func(string) (string, bool)
	stdout io.Writer
	stderr io.Writer
}

// newCLI returns the command name's flag set, with the admin API's options and
// --json, and a usage that says what the command does and the exit statuses.
func newCLI(name, synopsis, about string, env func(string) (string, bool), stdout, stderr io.Writer) (*cli, *flag.FlagSet) {
	c := &cli{prog: "reaper " + name, env: env, stdout: stdout, stderr: stderr}
	fs := newFlags(name, synopsis, stdout, stderr)
	c.target = addAdminFlags(fs)
	fs.BoolVar(&c.json, "json", false, "print the API's JSON answer, for scripts")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: reaper %s\n\n%s\n\n%s\nOptions:\n", synopsis, about, adminHelp)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\n%s", exitStatuses)
	}
	return c, fs
}

// addBy adds --by, who does an action: the OS user by default.
func (c *cli) addBy(fs *flag.FlagSet) {
	fs.StringVar(&c.by, "by", "", "who does it, kept in the app's history (default the OS user name)")
}

// parse parses the command line (from least to most arguments) and finds the
// admin API.
func (c *cli) parse(fs *flag.FlagSet, args []string, least, most int) ([]string, error) {
	pos, err := parseArgs(fs, args, c.stdout, least, most)
	if err != nil {
		return nil, err
	}
	if c.admin, err = c.target.client(c.prog, c.env, c.stderr); err != nil {
		return nil, err
	}
	c.api = c.admin.api()
	if c.by == "" {
		c.by = osUser(c.env)
	}
	return pos, nil
}

// osUser is the name of the user running the command, "" when unknown.
func osUser(env func(string) (string, bool)) string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if env == nil {
			break
		}
		if v, ok := env(k); ok && v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// busyConflict is the API's 409 when the job holds the app's lock at that
// moment (it is waking it, say): worth asking again, unlike the 409s that refuse
// an action for the app's state. The tests against a real node catch a change of
// its wording.
const busyConflict = "the app is being decided on right now; try again"

// An action that meets busyConflict is asked again every busyPause for up to
// busyRetry.
const (
	busyPause = 200 * time.Millisecond
	busyRetry = 15 * time.Second
)

// do makes an API call (f, with the context it gets) and returns its answer as
// the API sent it (for --json); an action that meets busyConflict is made again.
// A failure is printed on stderr, and its exit status returned (see fail).
func (c *cli) do(ctx context.Context, f func(context.Context) error) ([]byte, error) {
	deadline := time.Now().Add(busyRetry)
	for {
		var raw []byte
		err := f(adminapi.WithRaw(ctx, &raw))
		var e *adminapi.Error
		if errors.As(err, &e) && e.Status == http.StatusConflict && apiError(e.Body) == busyConflict &&
			time.Now().Before(deadline) && pause(ctx, busyPause) {
			continue
		}
		if err != nil {
			return nil, c.fail(err)
		}
		return raw, nil
	}
}

// pause waits for d, and reports false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// fail prints why a call failed, the API's own message when it gave one, and
// returns the exit status: exitUnreachable when it could not be made or its
// answer not read.
func (c *cli) fail(err error) error {
	var e *adminapi.Error
	switch {
	case errors.As(err, &e):
		fmt.Fprintf(c.stderr, "%s: %s (%d %s)\n", c.prog, c.admin.redact(cliWords(apiError(e.Body))), e.Status, http.StatusText(e.Status))
		return exitCode(exitFor(e.Status))
	case errors.Is(err, adminapi.ErrAnswer): // "unexpected answer from GET /api/apps: …"
		fmt.Fprintf(c.stderr, "%s: %s\n", c.prog, strings.TrimPrefix(err.Error(), "adminapi: "))
	default:
		fmt.Fprintf(c.stderr, "%s: the admin API at %s cannot be reached: %s\n", c.prog, c.admin.base, c.admin.redact(err.Error()))
	}
	return exitCode(exitUnreachable)
}

// cliWords says an API message in the command's words: a refused sleep names
// the API's ?force=true, which a command line gives as --force.
func cliWords(msg string) string {
	return strings.ReplaceAll(msg, "?force=true", "--force")
}

// exitFor is the exit status for an API's answer that is not 2xx.
func exitFor(status int) int {
	switch {
	case status == http.StatusNotFound:
		return exitNotFound
	case status == http.StatusConflict:
		return exitConflict
	case status >= 500:
		return exitUnreachable
	default:
		return exitRefused
	}
}

// apiError is the message of an error answer: its "error" field, else the
// answer itself (up to 200 bytes).
func apiError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "no message"
	}
	return s
}

// printJSON prints an answer of the API as it is, indented.
func (c *cli) printJSON(raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		b.Reset()
		b.Write(bytes.TrimSpace(raw))
	}
	b.WriteByte('\n')
	_, err := c.stdout.Write(b.Bytes())
	return err
}
