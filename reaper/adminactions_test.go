package reaper

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// An operator holds a sleeping app awake (it wakes), cannot put it to sleep while
// held, releases it, puts it to sleep now; every step shows in the API, the
// history and the event stream, with who did it.
func TestAdminAPI_HoldReleaseSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		e := newEnv(t, fake, "")
		e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		_, events, cancel := e.engine.Subscribe(0)
		defer cancel()

		code, body, _ := call(t, h, "POST", "/api/apps/app/_hold", `{"duration": "6h", "reason": "nightly backup", "by": "ops"}`)
		if code != 200 || body["hold"].(map[string]any)["reason"] != "nightly backup" {
			t.Fatalf("hold: %d %v", code, body)
		}
		settle()
		if got := fake.Get("app").State; got != paas.StateShouldBeUp {
			t.Fatalf("a hold on a sleeping app: platform state %s, want it woken", got)
		}
		_, app, _ := call(t, h, "GET", "/api/apps/app", "")
		if hold, _ := app["hold"].(map[string]any); app["status"] != "Up" || hold["by"] != "ops" || hold["reason"] != "nightly backup" {
			t.Fatalf("held app: %v; want Up with the hold, its reason and author", app)
		}
		code, body, _ = call(t, h, "POST", "/api/apps/app/_sleep", "")
		if msg, _ := body["error"].(string); code != 409 || !strings.Contains(msg, "held awake") || !strings.Contains(msg, "nightly backup") {
			t.Fatalf("sleep while held: %d %v; want 409 saying the hold", code, body)
		}
		time.Sleep(time.Hour) // the fake clock: an hour of no traffic passes
		settle()
		if st, _ := e.engine.Record("app"); st.Status != StatusUp {
			t.Fatalf("held app after an idle hour: %s, want Up", st.Status)
		}
		code, body, _ = call(t, h, "DELETE", "/api/apps/app/_hold?by=ops", "")
		if code != 200 || body["released"] != true {
			t.Fatalf("release: %d %v", code, body)
		}
		code, body, _ = call(t, h, "DELETE", "/api/apps/app/_hold", "")
		if code != 200 || body["released"] != false {
			t.Fatalf("release again: %d %v; want 200, released false", code, body)
		}
		code, body, _ = call(t, h, "POST", "/api/apps/app/_sleep", `{"by": "alice"}`)
		if code != 202 {
			t.Fatalf("sleep: %d %v", code, body)
		}
		settle()
		if got := fake.Get("app").State; got != paas.StateShouldBeDown || fake.Count("stop", "app") != 1 {
			t.Fatalf("after sleep now: platform %s, %d stops; want one stop", got, fake.Count("stop", "app"))
		}
		code, body, _ = call(t, h, "POST", "/api/apps/app/_reap", "")
		if msg, _ := body["error"].(string); code != 409 || !strings.Contains(msg, "already Down") {
			t.Fatalf("reap of a sleeping app: %d %v; want 409 already Down", code, body)
		}

		_, hist, _ := call(t, h, "GET", "/api/apps/app/history?page_size=50", "")
		var kinds []string
		for _, it := range hist["items"].([]any) {
			m := it.(map[string]any)
			k, _ := m["kind"].(string)
			if k == "" {
				k = m["to"].(string)
			}
			if by, _ := m["by"].(string); by != "" {
				k += " by " + by
			}
			kinds = append(kinds, k)
		}
		slices.Reverse(kinds)
		// The wake's phases are on its change to Up: no request was held, so no
		// node added a first answer.
		want := []string{"Down", "hold by ops", "WaitingForUp", "Up", "release by ops", "sleep by alice", "WaitingForShutdown", "Down"}
		if !slices.Equal(kinds, want) {
			t.Errorf("history (oldest first) = %q, want %q", kinds, want)
		}
		var seen []string
		for len(events) > 0 {
			ev := <-events
			seen = append(seen, ev.Type+":"+string(ev.To))
		}
		wantEv := []string{"hold:Down", "status:WaitingForUp", "status:Up", "release:Up", "sleep:Up", "status:WaitingForShutdown", "status:Down"}
		if !slices.Equal(seen, wantEv) {
			t.Errorf("events = %q, want %q", seen, wantEv)
		}
	})
}

// Every action names what is wrong with a bad call.
func TestAdminAPI_ActionErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		for _, c := range []struct {
			method, path, body string
			code               int
			says               string
		}{
			{"POST", "/api/apps/app/_hold", `{}`, 400, "duration is required"},
			{"POST", "/api/apps/app/_hold", `{"duration": "10s"}`, 400, "from 1m0s to 90 days"},
			{"POST", "/api/apps/app/_hold", `{"duration": "soon"}`, 400, "not a duration"},
			{"POST", "/api/apps/app/_hold", `{"duration": "1h", "for": "x"}`, 400, `unknown field "for"`},
			{"POST", "/api/apps/app/_hold", `{"duration": "1h", "reason": "` + strings.Repeat("x", 201) + `"}`, 400, "at most 200"},
			{"POST", "/api/apps/nope/_hold", `{"duration": "1h"}`, 404, `no route manages an app "nope"`},
			{"POST", "/api/apps/app/_sleep?force=maybe", "", 400, "force must be true or false"},
			{"POST", "/api/apps/app/_sleep", "", 409, "already Down"},
			{"POST", "/api/apps/nope/_sleep", "", 404, "no route manages"},
			{"DELETE", "/api/apps/nope/_hold", "", 404, "no route manages"},
			{"POST", "/api/apps/app/_wake", `[1]`, 400, "must be a JSON object"},
			{"GET", "/api/apps/app/wakes?limit=0", "", 400, "limit must be"},
			{"GET", "/api/apps/nope/awake", "", 404, "no route manages"},
		} {
			code, body, _ := call(t, h, c.method, c.path, c.body)
			if msg, _ := body["error"].(string); code != c.code || !strings.Contains(msg, c.says) {
				t.Errorf("%s %s %s = %d %v; want %d saying %q", c.method, c.path, c.body, code, body, c.code, c.says)
			}
		}
	})
}

func TestSleepRefusal(t *testing.T) {
	up := dtRecord(StatusUp)
	held := dtWith(up, func(r *Record) { r.Hold = &KeepWarm{Until: dtNow.Add(time.Hour), By: "ops", Reason: "backup"} })
	for _, c := range []struct {
		name   string
		rec    Record
		s      Settings
		p      Policy
		busy   int
		force  bool
		refuse string // "" when it may go
	}{
		{"up and quiet", up, Settings{}, dtPolicy, 0, false, ""},
		{"kill switch", up, Settings{KillSwitch: true}, dtPolicy, 0, true, "kill switch"},
		{"dry run", up, Settings{DryRun: true}, dtPolicy, 0, true, "dry run"},
		{"in Error", dtRecord(StatusError), Settings{}, dtPolicy, 0, false, "reset it, or ?force=true stops it"},
		{"in Error, forced", dtRecord(StatusError), Settings{}, dtPolicy, 3, true, ""},
		{"in Error, forced, kill switch", dtRecord(StatusError), Settings{KillSwitch: true}, dtPolicy, 0, true, "kill switch"},
		{"waking", dtRecord(StatusWaitingForUp), Settings{}, dtPolicy, 0, false, "waking up"},
		{"waking, forced", dtRecord(StatusWaitingForUp), Settings{}, dtPolicy, 2, true, ""},
		{"not observed", dtRecord(StatusWaitingForInit), Settings{}, dtPolicy, 0, true, "not been observed"},
		{"going to sleep", dtRecord(StatusWaitingForShutdown), Settings{}, dtPolicy, 0, true, "already WaitingForShutdown"},
		{"busy", up, Settings{}, dtPolicy, 3, false, "3 requests"},
		{"busy, forced", up, Settings{}, dtPolicy, 3, true, ""},
		{"keep-up range", up, Settings{}, dtKeepUp, 0, false, "keep-up range"},
		{"keep-up range, forced", up, Settings{}, dtKeepUp, 0, true, ""},
		{"held", held, Settings{}, dtPolicy, 0, false, "held awake until"},
		{"held, forced", held, Settings{}, dtPolicy, 0, true, ""},
	} {
		got := sleepRefusal(c.rec, c.s, c.p, c.busy, c.force, dtNow)
		switch {
		case c.refuse == "" && got != nil:
			t.Errorf("%s: refused (%s), want it allowed", c.name, got.msg)
		case c.refuse != "" && (got == nil || got.code != http.StatusConflict || !strings.Contains(got.msg, c.refuse)):
			t.Errorf("%s: %+v, want 409 saying %q", c.name, got, c.refuse)
		}
	}
}

// An action waits a moment for the job's lock rather than refusing at once, and
// says so when the lock stays taken.
func TestAdminAPI_ActionsWaitForTheJobsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("app"), "")
		e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()
		lock, err := e.store.Lock(t.Context(), "app", 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Second) // the job's look takes a second
			lock.Release(context.Background())
		}()
		if code, body, _ := call(t, h, "POST", "/api/apps/app/_hold", `{"duration": "1h"}`); code != 200 {
			t.Fatalf("hold while the job looks: %d %v; want it done once the lock is free", code, body)
		}
		settle()
		if _, err := e.store.Lock(t.Context(), "app", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code, body, _ := call(t, h, "DELETE", "/api/apps/app/_hold", "")
		if code != 409 || time.Since(start) < lockWait-time.Second || !strings.Contains(body["error"].(string), "try again") {
			t.Fatalf("release while the lock stays taken: %d %v after %v; want 409 after about %v", code, body, time.Since(start), lockWait)
		}
	})
}

// A forced sleep stops an app stuck waking (its start never ends) and one in
// Error, which nothing else could stop: each goes WaitingForShutdown, gets one
// stop, and is Down once the platform says so; the history says who forced it
// and from where. Without force both are refused, saying how to get out.
func TestAdminAPI_ForcedSleepStopsAnAppStuckWakingOrInError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("stuck", "broken")
		fake.Manual = true // a start stays WANTS_TO_BE_UP, a stop leaves the state
		e := newEnv(t, fake, "")
		e.route(config("stuck"))
		e.route(config("broken"))
		e.start()
		defer e.stop()
		settle()
		h := (&AdminAPI{Engine: e.engine, Store: e.store}).Handler()

		fake.FailNext("start", fmt.Errorf("the image is missing: %w", paas.ErrStartFailed))
		for _, id := range []string{"stuck", "broken"} {
			if code, body, _ := call(t, h, "POST", "/api/apps/"+id+"/_wake", ""); code != 202 {
				t.Fatalf("wake %s: %d %v", id, code, body)
			}
			settle()
		}
		// Which app got the failed start depends on nothing but the order above.
		for id, want := range map[string]Status{"stuck": StatusError, "broken": StatusWaitingForUp} {
			if rec, _ := e.engine.Record(id); rec.Status != want {
				t.Fatalf("%s is %s (%s), want %s", id, rec.Status, rec.Cause, want)
			}
		}
		for id, refusal := range map[string]string{"stuck": "reset it, or ?force=true stops it", "broken": "or ?force=true stops it now"} {
			code, body, _ := call(t, h, "POST", "/api/apps/"+id+"/_sleep", "")
			if msg, _ := body["error"].(string); code != 409 || !strings.Contains(msg, refusal) {
				t.Errorf("sleep %s: %d %v; want 409 saying %q", id, code, body, refusal)
			}
			if n := fake.Count("stop", id); n != 0 {
				t.Errorf("%s got %d stops after a refused sleep", id, n)
			}
			code, body, _ = call(t, h, "POST", "/api/apps/"+id+"/_sleep?force=true", `{"by": "bob"}`)
			if code != 202 {
				t.Fatalf("forced sleep of %s: %d %v", id, code, body)
			}
			settle()
			rec, _ := e.engine.Record(id)
			// In Error the platform already says down (its start failed); a
			// start in progress still says WANTS_TO_BE_UP, which is no restart
			// from outside.
			want := map[string]Status{"stuck": StatusDown, "broken": StatusWaitingForShutdown}[id]
			if n := fake.Count("stop", id); n != 1 || rec.Status != want {
				t.Fatalf("%s after a forced sleep: %d stops, %s (%s); want one stop, %s", id, n, rec.Status, rec.Cause, want)
			}
			// The platform catches up: the app is down.
			fake.Set(id, paastest.App{State: paas.StateShouldBeDown,
				Deployment: &paas.Deployment{State: paas.DeploymentOK, Action: "UNDEPLOY", At: time.Now()}})
			settle()
			if rec, _ := e.engine.Record(id); rec.Status != StatusDown || fake.Count("stop", id) != 1 {
				t.Errorf("%s once stopped: %s (%s), %d stops; want Down after one stop", id, rec.Status, rec.Cause, fake.Count("stop", id))
			}
		}
		_, hist, _ := call(t, h, "GET", "/api/apps/stuck/history", "")
		var causes []string
		for _, it := range hist["items"].([]any) {
			causes = append(causes, it.(map[string]any)["cause"].(string))
		}
		if !slices.Contains(causes, "put to sleep by bob (forced, from Error)") {
			t.Errorf("stuck's history %q does not say bob forced it to sleep from Error", causes)
		}
	})
}
