package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// Tests of the admin commands against a fake admin API, for what a real node
// cannot be made to do on demand.

// fakeAPI serves h behind the test token.
func fakeAPI(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, `{"error": "a valid admin token is required"}`, http.StatusUnauthorized)
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// stuckApp answers a wake, then the app in status (with errorCause) forever.
func stuckApp(status, errorCause string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /api/apps/db/_wake":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"app_id": "db", "asked": true, "status": "Down"}`)
		case "GET /api/apps/db":
			fmt.Fprintf(w, `{"app_id": "db", "status": %q, "error_cause": %q}`, status, errorCause)
		default:
			http.NotFound(w, r)
		}
	}
}

func TestWakeCmd_WaitTimesOutExits6(t *testing.T) {
	admin := fakeAPI(t, stuckApp("WaitingForUp", ""))
	start := time.Now()
	r := runCLI(t, context.Background(), "wake", "db", "--wait", "--timeout", "700ms", "--admin", admin)
	if r.code != exitTimeout || r.stderr != "reaper wake: db: not Up after 700ms (last seen WaitingForUp)\n" ||
		r.stdout != "db: wake asked (Down); waiting until it is Up\ndb: WaitingForUp\n" {
		t.Errorf("wake --wait on an app that never comes up: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("wake --wait --timeout 700ms took %v", took)
	}
}

func TestWakeCmd_WaitOnAnAppInErrorExits7(t *testing.T) {
	admin := fakeAPI(t, stuckApp("Error", "the platform refused the start"))
	r := runCLI(t, context.Background(), "wake", "db", "--wait", "--admin", admin)
	if r.code != exitAppError || !strings.Contains(r.stderr, "db is in Error: the platform refused the start; `reaper reset db` puts it back") {
		t.Errorf("wake --wait on an app in Error: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestEventsCmd_ReconnectsWithLastEventID(t *testing.T) {
	var mu sync.Mutex
	var asked []string // the Last-Event-ID of each connection
	admin := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Last-Event-ID"))
		n := len(asked)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 2000\n\n: keep-alive\n\n")
		// The first connection is cut after event 41; the second goes on from 42.
		fmt.Fprintf(w, "id: %d\nevent: sleep\ndata: {\"id\": %[1]d, \"type\": \"sleep\", \"app_id\": \"db\", \"by\": \"alice\"}\n\n", 40+n)
		if n > 1 {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"events", "--json", "--admin", admin, "--token", testToken}, noEnv, &stdout, &stderr)
	}()
	testwait.For(t, 10*time.Second, "the events of both connections", func() bool { return strings.Count(stdout.String(), "\n") == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("reaper events ended with %v after Ctrl-C", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := `{"id": 41, "type": "sleep", "app_id": "db", "by": "alice"}` + "\n" + `{"id": 42, "type": "sleep", "app_id": "db", "by": "alice"}` + "\n"
	if len(asked) != 2 || asked[0] != "" || asked[1] != "41" || stdout.String() != want {
		t.Errorf("connections with Last-Event-ID %q printed:\n%s", asked, stdout.String())
	}
	if !strings.Contains(stderr.String(), "reaper events: the stream ended; reconnecting in 500ms") {
		t.Errorf("reaper events did not say it reconnects:\n%s", stderr.String())
	}
}

// savingsAnswer is an answer of /api/savings, in the shape the API gives: a
// priced app, an app without a price.
const savingsAnswer = `{"apps": [
 {"app_id": "hello", "asleep": true, "currency": "EUR", "price_per_hour": 0.0417, "gib": 1,
  "today": {"asleep_seconds": 36000, "money": 0.417, "gib_hours": 10},
  "month": {"asleep_seconds": 1080000, "money": 12.51, "gib_hours": 300},
  "all_time": {"asleep_seconds": 3600000, "money": 41.7, "gib_hours": 1000}, "saving_now_per_hour": 0.0417},
 {"app_id": "api", "currency": "EUR", "gib": 0.25,
  "today": {"asleep_seconds": 0, "money": 0, "gib_hours": 0},
  "month": {"asleep_seconds": 7200, "money": 0, "gib_hours": 0.5},
  "all_time": {"asleep_seconds": 7200, "money": 0, "gib_hours": 0.5}, "saving_now_per_hour": 0}],
 "total": {"currency": "EUR", "today": {"asleep_seconds": 36000, "money": 0.417, "gib_hours": 10},
  "month": {"asleep_seconds": 1087200, "money": 12.51, "gib_hours": 300.5},
  "all_time": {"asleep_seconds": 3607200, "money": 41.7, "gib_hours": 1000.5}, "saving_now_per_hour": 0.0417}}`

func TestSavingsCmd_PrintsATableAndTheJSON(t *testing.T) {
	admin := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/savings" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, savingsAnswer)
	})
	r := runCLI(t, context.Background(), "savings", "--admin", admin)
	want := `APP    ASLEEP  PRICE         MEMORY   TODAY           MONTH               ALL TIME            SAVING NOW
hello  yes     0.0417 EUR/h  1 GiB    0.42 EUR (10h)  12.51 EUR (12d12h)  41.70 EUR (41d16h)  0.0417 EUR/h
api    no      -             256 MiB  -               2h (0.5 GiB·h)      2h (0.5 GiB·h)      -
TOTAL                                 0.42 EUR (10h)  12.51 EUR (12d14h)  41.70 EUR (41d18h)  0.0417 EUR/h
`
	if r.code != 0 || r.stdout != want {
		t.Errorf("reaper savings: %d\n%s\nwant:\n%s%s", r.code, r.stdout, want, r.stderr)
	}
	if r = runCLI(t, context.Background(), "savings", "--json", "--admin", admin); r.code != 0 ||
		!strings.HasPrefix(r.stdout, "{\n  \"apps\": [\n    {\n      \"app_id\": \"hello\",") {
		t.Errorf("reaper savings --json: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestAdminTarget_FlagsThenConfigThenEnvironment(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "reaper.yaml")
	if err := os.WriteFile(config, []byte("node: {id: n1, admin_listen: \"0.0.0.0:9191\", admin_token: from-config}\npaas: {driver: process}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"REAPER_ADMIN_URL": "https://admin.example:9443/", "REAPER_ADMIN_TOKEN": "from-env"}[k]
		return v, ok
	}
	for _, c := range []struct {
		target          adminTarget
		base, token     string
		env             func(string) (string, bool)
		wantUsageFailed bool
	}{
		{adminTarget{}, "https://admin.example:9443", "from-env", env, false},
		{adminTarget{url: "10.0.0.5:9090", token: "from-flag"}, "http://10.0.0.5:9090", "from-flag", env, false},
		{adminTarget{config: config}, "http://127.0.0.1:9191", "from-config", env, false},
		{adminTarget{config: config, url: "http://other:1", token: "t"}, "http://other:1", "t", env, false},
		{adminTarget{}, defaultAdmin, "", noEnv, true},
		{adminTarget{url: "ftp://x", token: "t"}, "", "", noEnv, true},
	} {
		var stderr strings.Builder
		a, err := c.target.client("reaper test", c.env, &stderr)
		if c.wantUsageFailed {
			if err != exitCode(exitUsage) {
				t.Errorf("%+v: %v, want a usage error", c.target, err)
			}
			continue
		}
		if err != nil || a.base != c.base || a.token != c.token {
			t.Errorf("%+v: %q %q %v %s, want %q %q", c.target, a.base, a.token, err, stderr.String(), c.base, c.token)
		}
	}
}

// An answer the command cannot read (a proxy's page instead of the API's JSON,
// say) is no success: exit 3, saying what came from where.
func TestAdminCmd_AnAnswerItCannotReadExits3(t *testing.T) {
	admin := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>maintenance</html>")
	})
	for _, cmd := range [][]string{{"apps"}, {"app", "db"}, {"wake", "db"}, {"savings"}} {
		r := runCLI(t, context.Background(), append(cmd, "--admin", admin)...)
		if r.code != exitUnreachable || !strings.HasPrefix(r.stderr, "reaper "+cmd[0]+": unexpected answer from ") || r.stdout != "" {
			t.Errorf("reaper %s answered HTML: %d\n%s%s; want exit 3 saying the answer is unexpected", cmd, r.code, r.stdout, r.stderr)
		}
	}
}
