package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
	"github.com/reapergw/reaper/webhook"
)

// hookReceiver is a webhook's receiver: down (503) until up is called; it
// checks every request's signature and keeps the events it took.
type hookReceiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu    sync.Mutex
	isUp  bool
	tries int
	taken []webhook.Payload
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	r := &hookReceiver{t: t, secret: secret}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := webhook.Verify([]byte(r.secret), req.Header.Get(webhook.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		r.t.Errorf("a delivery's signature does not verify: %v (%s)", err, body)
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil || p.ID != req.Header.Get(webhook.HeaderEventID) {
		r.t.Errorf("a delivery's body %s (%v) does not match its id header %q", body, err, req.Header.Get(webhook.HeaderEventID))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if !r.isUp {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.taken = append(r.taken, p)
}

func (r *hookReceiver) up() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.isUp = true
}

func (r *hookReceiver) attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries
}

func (r *hookReceiver) events() []webhook.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.taken)
}

// queued reads the webhook's queue in Valkey: its event ids, oldest first, and
// the app of each (not one read: an event delivered meanwhile may be left out).
func (e *clusterEnv) queued(hook string) (ids []string, apps map[string]string) {
	e.t.Helper()
	raw, err := e.redis.Do("ZRANGE", "reaper:queue:"+hook, "0", "-1")
	if err != nil {
		e.t.Fatalf("reading the queue: %v", err)
	}
	apps = map[string]string{}
	for id := range strings.SplitSeq(raw, "\n") {
		if id == "" {
			continue
		}
		js, err := e.redis.Do("HGET", "reaper:queue-events:"+hook, id)
		if err == nil && js == "" {
			continue // delivered since the ZRANGE
		}
		var ev struct {
			AppID string `json:"app_id"`
		}
		if err != nil || json.Unmarshal([]byte(js), &ev) != nil {
			e.t.Fatalf("event %s of the queue: %q, %v", id, js, err)
		}
		ids = append(ids, id)
		apps[id] = ev.AppID
	}
	return ids, apps
}

// Events queued while the receiver is down outlive the leader that queued
// them: the next leader delivers every one once the receiver is back, each
// once, each app's in the order they happened, signed.
func TestCluster_WebhookLeaderKilledWithEventsQueuedLosesNone(t *testing.T) {
	const secret = "cluster-webhook-secret-0123456789"
	recv := newHookReceiver(t, secret)
	extra := fmt.Sprintf("events:\n  webhooks:\n    - {name: ops, url: %q, secret: %q, max_age: 10m}\n", recv.srv.URL+"/reaper", secret)
	down := fakeclever.StateShouldBeDown
	e := newClusterExtra(t, clusterClever(), 3, extra,
		clusterApp{name: "web", state: down, grace: "10m"}, clusterApp{name: "api", state: down, grace: "10m"})
	lead := e.waitLeader(e.nodes, 20*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 15*time.Second)
	e.waitAppStatus(e.nodes, "api", "Down", 15*time.Second)
	old := e.node(lead.ID)
	followers := others(e.nodes, old)

	// Operators act through the followers (their writes go to the leader): two
	// holds wake the apps, a release; each a few events.
	for i, name := range []string{"web", "api"} {
		path := "/api/apps/" + e.ids[name] + "/_hold"
		if code, body := e.adminDo(followers[i], "POST", path, `{"duration": "1h", "reason": "backup", "by": "ops"}`); code != 200 {
			t.Fatalf("hold %s: %d %v", name, code, body)
		}
	}
	e.waitAppStatus(e.nodes, "web", "Up", 20*time.Second)
	e.waitAppStatus(e.nodes, "api", "Up", 20*time.Second)
	if code, body := e.adminDo(followers[0], "DELETE", "/api/apps/"+e.ids["web"]+"/_hold", `{"by": "ops"}`); code != 200 {
		t.Fatalf("release: %d %v", code, body)
	}
	// Per app: Down (first look), hold, WaitingForUp, Up; web's release.
	var ids []string
	var apps map[string]string
	testwait.For(t, 10*time.Second, "9 events queued", func() bool {
		ids, apps = e.queued("ops")
		return len(ids) >= 9
	})
	testwait.For(t, 10*time.Second, "the leader trying the down receiver", func() bool { return recv.attempts() >= 3 })
	if n := len(recv.events()); n != 0 {
		t.Fatalf("a receiver answering 503 took %d events", n)
	}

	old.p.kill()
	next := e.waitLeader(followers, 15*time.Second, old.id)
	before := recv.attempts()
	testwait.For(t, 10*time.Second, "the new leader trying the receiver", func() bool { return recv.attempts() > before })
	t.Logf("new leader %s; %d events queued, %d attempts so far", next.ID, len(ids), recv.attempts())
	recv.up()

	testwait.For(t, 30*time.Second, "every queued event delivered", func() bool {
		left, _ := e.queued("ops")
		return len(left) == 0 && len(recv.events()) >= len(ids)
	})
	got := recv.events()
	seen := map[string]int{}
	perApp := map[string][]string{}
	for _, p := range got {
		seen[p.ID]++
		perApp[p.AppID] = append(perApp[p.AppID], p.ID)
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	wantApp := map[string][]string{}
	for _, id := range ids {
		wantApp[apps[id]] = append(wantApp[apps[id]], id)
		if seen[id] == 0 {
			t.Errorf("event %s (%s) queued before the leader died was never delivered", id, apps[id])
		}
	}
	for app, want := range wantApp {
		if g := perApp[app]; len(g) < len(want) || !slices.Equal(g[:len(want)], want) {
			t.Errorf("%s's events arrived as %v, want %v first (the order queued)", app, g, want)
		}
	}
	var kinds []string
	for _, p := range got {
		if p.AppID == e.ids["web"] {
			kinds = append(kinds, p.Type+":"+string(p.To))
		}
	}
	if want := []string{"status:Down", "hold:Down", "status:WaitingForUp", "status:Up", "release:Up"}; !slices.Equal(kinds, want) {
		t.Errorf("web's events: %q, want %q", kinds, want)
	}
	for _, n := range e.nodes {
		if text := n.p.logText(); strings.Contains(text, secret) || strings.Contains(text, recv.srv.URL+"/reaper") {
			t.Errorf("%s: the webhook's secret or URL appears in the log", n.id)
		}
	}
}
