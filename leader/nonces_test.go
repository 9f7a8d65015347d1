package leader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNonces_EachTakenOnceWithBoundedMemory(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	n := newNonces(4)
	for _, c := range []struct {
		nonce     string
		signed    time.Time
		now       time.Time
		first     bool
		remembers int
	}{
		{"a", at(0), at(0), true, 1},
		{"a", at(0), at(10), false, 1}, // a replay 10 s later
		{"a", at(0), at(59), false, 1}, // still within the window
		{"b", at(5), at(60), true, 2},  // a is 60 s old: kept until past the window
		{"c", at(30), at(61), true, 2}, // a is forgotten: its call would be refused as stale anyway
		{"b", at(5), at(61), false, 2}, // b is not
		{"d", at(40), at(62), true, 3}, //
		{"e", at(41), at(62), true, 4}, // full
		{"f", at(42), at(62), true, 4}, // b, the oldest, is forgotten, and the floor rises to its time
		{"g", at(5), at(62), false, 4}, // signed at the floor: its nonce may be one forgotten
		{"b", at(5), at(62), false, 4}, // so b's replay is still refused
	} {
		if got := n.first(signed{at: c.signed, nonce: c.nonce}, c.now); got != c.first {
			t.Errorf("%s signed at %v, seen at %v: first = %v, want %v", c.nonce, c.signed.Sub(t0), c.now.Sub(t0), got, c.first)
		}
		if got := n.len(); got != c.remembers {
			t.Errorf("after %s: %d nonces remembered, want %d", c.nonce, got, c.remembers)
		}
	}
	// However many calls, the memory stays bounded.
	n = newNonces(100)
	for i := range 10_000 {
		n.first(signed{at: t0.Add(time.Duration(i) * time.Millisecond), nonce: fmt.Sprint(i)}, t0.Add(time.Duration(i)*time.Millisecond))
		if n.len() > 100 || len(n.order) > 300 {
			t.Fatalf("after %d calls: %d remembered, order of %d", i+1, n.len(), len(n.order))
		}
	}
}

// killSwitch is the admin API's settings, as far as this test needs them.
type killSwitch struct {
	mu sync.Mutex
	on bool
}

func (k *killSwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var s struct {
		KillSwitch bool `json:"kill_switch"`
	}
	if r.Method != http.MethodPut || r.URL.Path != "/api/settings" || json.NewDecoder(r.Body).Decode(&s) != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	k.mu.Lock()
	k.on = s.KillSwitch
	k.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (k *killSwitch) get() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.on
}

// A "kill switch on" that a follower forwarded to the leader, captured on the
// way and replayed 10 s after the operator turned the switch off, is refused:
// the switch stays off. Replayed to another node, it is refused too.
func TestAPI_ACapturedCallReplayedIsRefused(t *testing.T) {
	ac := newAPICluster(t, 2)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	lid, fid := lead.cfg.NodeID, ac.followers(lead)[0]

	// The leader's API, with the settings and a clock the test moves; in
	// front of it, whoever listens on the wire keeps a copy of every call.
	settings := &killSwitch{}
	var offset atomic.Int64
	api := &API{Node: lead.node, Asks: ac.asks[lid], Writes: settings, Logger: ac.logs.Logger(slog.LevelInfo),
		now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }}
	internal := api.Internal()
	var (
		mu       sync.Mutex
		captured []*http.Request
	)
	ac.front[lid].set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := r.Clone(context.Background())
		c.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		captured = append(captured, c)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		internal.ServeHTTP(w, r)
	}))

	// The operator turns the kill switch on, then off, on the follower, which
	// forwards both writes to the leader.
	forward := ac.apis[fid].ForwardWrites(http.NotFoundHandler())
	for _, on := range []bool{true, false} {
		rec := call(forward, "PUT", "/api/settings", fmt.Sprintf(`{"kill_switch":%v}`, on), nil, time.Now())
		if rec.Code != http.StatusOK || settings.get() != on {
			t.Fatalf("kill switch %v through the follower: %d %s, switch %v", on, rec.Code, rec.Body, settings.get())
		}
	}
	mu.Lock()
	on := captured[0]
	mu.Unlock()
	if !strings.Contains(on.Header.Get(HeaderSignature), ":") {
		t.Fatalf("the captured call carries no signature: %v", on.Header)
	}

	// 10 s later, well within the signature's window, the captured "on" is sent again.
	offset.Store(int64(10 * time.Second))
	replay := func(addr string) (int, string) {
		body, _ := io.ReadAll(on.Body)
		on.Body = io.NopCloser(bytes.NewReader(body))
		req, _ := http.NewRequest(on.Method, "http://"+addr+on.URL.RequestURI(), bytes.NewReader(body))
		req.Header = on.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := replay(ac.apiAddr(lid)); code != http.StatusUnauthorized || body != jsonError("this signed call was taken already: every internal call is taken once") {
		t.Errorf("the captured call replayed to the leader: %d %s, want 401", code, body)
	}
	if settings.get() {
		t.Fatal("the replayed call turned the kill switch back on")
	}
	if ac.logs.Lines("an internal call was refused: its nonce was seen already", "path=/internal/admin/api/settings") != 1 {
		t.Errorf("the replay is not logged:\n%s", ac.logs.String())
	}
	// To another node (had it become the leader), it is not for it.
	want := jsonError(fmt.Sprintf("this call was signed for node %q; this is %q", lid, fid))
	if code, body := replay(ac.apiAddr(fid)); code != http.StatusMisdirectedRequest || body != want {
		t.Errorf("the captured call replayed to %s: %d %s, want 421 %s", fid, code, body, want)
	}
	// A fresh call still goes through.
	rec := call(forward, "PUT", "/api/settings", `{"kill_switch":true}`, nil, time.Now())
	if rec.Code != http.StatusOK || !settings.get() {
		t.Errorf("a new call after the replay: %d %s", rec.Code, rec.Body)
	}
}
