package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/logtest"
)

// askRecorder is an AskHandler that records the apps it is asked for.
type askRecorder struct {
	mu   sync.Mutex
	apps []string
}

func (r *askRecorder) Ask(_ context.Context, appID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.apps = append(r.apps, appID)
	return nil
}

func (r *askRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.apps)
}

// apiCluster is a test cluster whose nodes serve their API on the API addresses of their peers, so that
// Forward reaches the leader's handlers.
type apiCluster struct {
	*cluster
	apis map[string]*API
	srvs map[string]*httptest.Server // each node's API server, by id
	// front serves each node's API server: the node's API, unless a test put
	// another handler in front of it.
	front map[string]*swapHandler
	asks  map[string]*askRecorder // what reached each node's AskHandler
	logs  *logtest.Buffer         // the API's own lines, from every node
}

func newAPICluster(t *testing.T, n int) *apiCluster {
	t.Helper()
	return newAPIClusterWith(t, n, nil)
}

// newAPIClusterWith is newAPICluster where the node of each id in tlsOf has that TLS, for Raft and for its
// API, which it then serves over HTTPS.
func newAPIClusterWith(t *testing.T, n int, tlsOf map[string]*TLS) *apiCluster {
	t.Helper()
	srvs := make([]*httptest.Server, n)
	apiAddrs := make([]string, n)
	for i := range srvs {
		srvs[i] = httptest.NewUnstartedServer(nil)
		t.Cleanup(srvs[i].Close)
		apiAddrs[i] = srvs[i].Listener.Addr().String()
	}
	ac := &apiCluster{cluster: newClusterWith(t, apiAddrs, tlsOf), apis: map[string]*API{}, srvs: map[string]*httptest.Server{}, front: map[string]*swapHandler{}, asks: map[string]*askRecorder{}, logs: &logtest.Buffer{}}
	for i, p := range ac.peers {
		ac.asks[p.ID] = &askRecorder{}
		api := ac.serveAPI(ac.nodes[p.ID], ac.asks[p.ID])
		mux := http.NewServeMux()
		mux.Handle("/internal/", api.Internal())
		mux.Handle("/api/cluster", api.Admin())
		mux.Handle("/api/cluster/", api.Admin())
		ac.front[p.ID] = &swapHandler{}
		ac.front[p.ID].set(mux)
		srvs[i].Config.Handler = ac.front[p.ID]
		ac.srvs[p.ID] = srvs[i]
		if tlsOf[p.ID] == nil {
			srvs[i].Start()
			continue
		}
		srvs[i].TLS = tlsOf[p.ID].AdminConfig()
		srvs[i].StartTLS()
	}
	return ac
}

// swapHandler serves with the handler set last; safe to set while it serves.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

func (ac *apiCluster) serveAPI(tn *testNode, asks AskHandler) *API {
	id := tn.cfg.NodeID
	echo := func(what string) http.Handler { // says which node served what
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if what == "write" {
				w.WriteHeader(http.StatusCreated)
			}
			fmt.Fprintf(w, "%s %s %s %s %s", what, id, r.Method, r.URL.RequestURI(), body)
		})
	}
	api := &API{Node: tn.node, Asks: asks, Logger: ac.logs.Logger(slog.LevelInfo), Writes: echo("write"), Local: echo("local")}
	ac.apis[tn.cfg.NodeID] = api
	return api
}

// followers returns the ids of the running nodes other than lead.
func (ac *apiCluster) followers(lead *testNode) []string {
	return slices.DeleteFunc(ac.ids(), func(id string) bool { return id == lead.cfg.NodeID })
}

// call runs one request through h. With a secret, the request is signed with it at the given time.
func call(h http.Handler, method, path, body string, secret []byte, at time.Time) *httptest.ResponseRecorder {
	return callFor(h, "", method, path, body, secret, at)
}

// callFor is call, signed (with a secret) for the node target.
func callFor(h http.Handler, target, method, path, body string, secret []byte, at time.Time) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if secret != nil {
		Sign(req, []byte(body), secret, target, at)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// jsonError is the body of every error the API answers: httpjson.Error's, indented.
func jsonError(msg string) string {
	b, _ := json.MarshalIndent(map[string]string{"error": msg}, "", "  ")
	return string(b) + "\n"
}

func wantAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder, code int, body string) {
	t.Helper()
	if rec.Code != code || rec.Body.String() != body {
		t.Errorf("%s: %d %q, want %d %q", what, rec.Code, rec.Body.String(), code, body)
	}
	if ct := rec.Header().Get("Content-Type"); body != "" && ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
}

func TestAPI_InternalCallsMustBeSigned(t *testing.T) {
	ac := newAPICluster(t, 1)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	h := ac.apis[lead.cfg.NodeID].Internal()
	unsigned := jsonError("internal calls must be signed with the cluster secret")
	now := time.Now()
	call := func(h http.Handler, method, path, body string, secret []byte, at time.Time) *httptest.ResponseRecorder {
		return callFor(h, lead.cfg.NodeID, method, path, body, secret, at)
	}

	wantAnswer(t, "no signature", call(h, "POST", "/internal/asks/web", "", nil, now), 401, unsigned)
	wantAnswer(t, "another secret", call(h, "POST", "/internal/asks/web", "", strangerSecret, now), 401, unsigned)
	wantAnswer(t, "stale", call(h, "POST", "/internal/asks/web", "", testSecret, now.Add(-SignatureWindow-time.Second)), 401, unsigned)
	wantAnswer(t, "from the future", call(h, "POST", "/internal/asks/web", "", testSecret, now.Add(SignatureWindow+time.Second)), 401, unsigned)
	forged := httptest.NewRequest("DELETE", "/internal/members/n1", nil)
	Sign(forged, nil, testSecret, lead.cfg.NodeID, now)
	forged.URL.Path = "/internal/members/n2"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, forged)
	wantAnswer(t, "signature of another path", rec, 401, unsigned)
	if got := ac.asks[lead.cfg.NodeID].got(); len(got) != 0 {
		t.Fatalf("unsigned asks reached the job: %v", got)
	}
	if members := lead.node.Status().Members; len(members) != 1 {
		t.Fatalf("an unsigned call changed the membership: %v", members)
	}

	wantAnswer(t, "signed", call(h, "POST", "/internal/asks/web", "", testSecret, now), 202, "")
	if got := ac.asks[lead.cfg.NodeID].got(); !slices.Equal(got, []string{"web"}) {
		t.Errorf("the signed ask reached the job as %v, want [web]", got)
	}
}

func TestAPI_AskReachesTheLeadersJobOnly(t *testing.T) {
	ac := newAPICluster(t, 3)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	ctx, cancel := context.WithTimeout(context.Background(), electionBound)
	defer cancel()

	// Signed internal asks, over the network: a follower refuses, the leader takes it.
	path := "/internal/asks/" + url.PathEscape("app one")
	for _, id := range ac.ids() {
		code, body, err := ac.nodes[id].node.Call(ctx, id, ac.apiAddr(id), "POST", path, nil)
		wantCode, wantBody := 421, jsonError("this node is not the leader")
		if id == lead.cfg.NodeID {
			wantCode, wantBody = 202, ""
		}
		if err != nil || code != wantCode || string(body) != wantBody {
			t.Errorf("ask on %s: %d %q %v, want %d %q", id, code, body, err, wantCode, wantBody)
		}
	}
	for _, id := range ac.ids() {
		want := []string(nil)
		if id == lead.cfg.NodeID {
			want = []string{"app one"}
		}
		if got := ac.asks[id].got(); !slices.Equal(got, want) {
			t.Errorf("asks that reached the job of %s: %v, want %v", id, got, want)
		}
	}

	// An Asker forwards from a follower, and hands the ask to its own job on the leader.
	local := &askRecorder{}
	follower := ac.nodes[ac.followers(lead)[0]]
	if err := (Asker{Node: follower.node, Local: local}).Ask(ctx, "web"); err != nil {
		t.Fatalf("Asker on follower %s: %v", follower.cfg.NodeID, err)
	}
	if got := ac.asks[lead.cfg.NodeID].got(); !slices.Equal(got, []string{"app one", "web"}) {
		t.Errorf("after a follower's Asker, the leader's job got %v, want [app one web]", got)
	}
	if err := (Asker{Node: lead.node, Local: local}).Ask(ctx, "api"); err != nil {
		t.Fatalf("Asker on the leader: %v", err)
	}
	if got := local.got(); !slices.Equal(got, []string{"api"}) {
		t.Errorf("the local job got %v, want only the leader's own ask [api]", got)
	}
	if got := ac.asks[lead.cfg.NodeID].got(); len(got) != 2 {
		t.Errorf("the leader's Asker went through the internal API: %v", got)
	}
}

func TestAPI_MembersChangeOnTheLeader(t *testing.T) {
	ac := newAPICluster(t, 3)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	follower := ac.followers(lead)[0]
	ln := listen(t)
	p4 := Peer{ID: "n4", RaftAddr: ln.Addr().String(), APIAddr: "127.0.0.1:19004"}
	cfg := ac.config("n4", nil, testSecret)
	cfg.Advertise = p4.RaftAddr
	ac.start(cfg, ln)
	body := `{"id": "n4", "raft_addr": "` + p4.RaftAddr + `", "api_addr": "` + p4.APIAddr + `"}`
	notLeader := jsonError("this node is not the leader")

	// A node that thought the follower led: refused, not forwarded.
	internal := ac.apis[follower].Internal()
	wantAnswer(t, "internal add on a follower", callFor(internal, follower, "POST", "/internal/members", body, testSecret, time.Now()), 421, notLeader)
	wantAnswer(t, "internal remove on a follower", callFor(internal, follower, "DELETE", "/internal/members/n2", "", testSecret, time.Now()), 421, notLeader)
	if members := lead.node.Status().Members; len(members) != 3 {
		t.Fatalf("a refused call changed the membership: %v", members)
	}

	// An operator's call on a follower is forwarded to the leader, which adds the voter.
	rec := call(ac.apis[follower].Admin(), "POST", "/api/cluster/members", body, nil, time.Time{})
	st := decodeStatus(t, "operator add on a follower", rec)
	if st.ID != lead.cfg.NodeID || !slices.ContainsFunc(st.Members, func(m Member) bool { return m.ID == "n4" && m.RaftAddr == p4.RaftAddr }) {
		t.Errorf("operator add on a follower: answered by %s with members %v, want the leader %s with n4", st.ID, st.Members, lead.cfg.NodeID)
	}
	want := map[string]string{"n4": p4.APIAddr}
	for _, p := range ac.peers {
		want[p.ID] = p.APIAddr
	}
	ac.waitMembers(want)
	if ac.logs.Lines("cluster member added", "id=n4", "raft_addr="+p4.RaftAddr, "api_addr="+p4.APIAddr) != 1 {
		t.Errorf("no log line for the added member:\n%s", ac.logs.String())
	}

	// An internal call on the leader removes the member.
	lead, _ = ac.waitAgreement(electionBound, ac.ids()...)
	rec = callFor(ac.apis[lead.cfg.NodeID].Internal(), lead.cfg.NodeID, "DELETE", "/internal/members/n4", "", testSecret, time.Now())
	st = decodeStatus(t, "internal remove on the leader", rec)
	if slices.ContainsFunc(st.Members, func(m Member) bool { return m.ID == "n4" }) {
		t.Errorf("internal remove on the leader: n4 is still a member: %v", st.Members)
	}
	if ac.logs.Lines("cluster member removed", "id=n4") != 1 {
		t.Errorf("no log line for the removed member:\n%s", ac.logs.String())
	}
	ac.stop("n4")
	delete(want, "n4")
	ac.waitMembers(want)
}

func decodeStatus(t *testing.T, what string, rec *httptest.ResponseRecorder) Status {
	t.Helper()
	var st Status
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &st) != nil {
		t.Fatalf("%s: %d %q, want 200 and the cluster's status", what, rec.Code, rec.Body.String())
	}
	return st
}

func TestAPI_BadMemberBodyIs400(t *testing.T) {
	ac := newAPICluster(t, 1)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	api := ac.apis[lead.cfg.NodeID]
	shape := jsonError(`the body must be {"id": …, "raft_addr": "host:port", "api_addr": "host:port"}`)
	for _, body := range []string{
		``,
		`not json`,
		`{"id": "n9", "raft_addr": "127.0.0.1:7009"}`,
		`{"id": "n9", "raft_addr": "127.0.0.1:7009", "api_addr": "127.0.0.1:9009", "voter": true}`,
	} {
		wantAnswer(t, "operator add "+body, call(api.Admin(), "POST", "/api/cluster/members", body, nil, time.Time{}), 400, shape)
		wantAnswer(t, "internal add "+body, callFor(api.Internal(), lead.cfg.NodeID, "POST", "/internal/members", body, testSecret, time.Now()), 400, shape)
	}
	large := `{"id": "` + strings.Repeat("x", 5000) + `", "raft_addr": "127.0.0.1:7009", "api_addr": "127.0.0.1:9009"}`
	wantAnswer(t, "operator add, too large", call(api.Admin(), "POST", "/api/cluster/members", large, nil, time.Time{}), 400, jsonError("the body is too large"))
	if members := lead.node.Status().Members; len(members) != 1 {
		t.Errorf("a bad body changed the membership: %v", members)
	}
}

func TestAPI_NoLeaderKnown(t *testing.T) {
	ac := newAPICluster(t, 1)
	ac.waitAgreement(electionBound, ac.ids()...)
	// A node outside every peers list, with no Raft state, waits to be added and knows no leader.
	ln := listen(t)
	cfg := ac.config("lonely", nil, testSecret)
	cfg.Advertise = ln.Addr().String()
	lonely := ac.start(cfg, ln)
	api := ac.serveAPI(lonely, &askRecorder{})
	if _, _, ok := lonely.node.Leader(); ok {
		t.Fatal("a node nobody added knows a leader")
	}

	noLeader := jsonError("no leader is known right now (an election may be under way); try again")
	body := `{"id": "n9", "raft_addr": "127.0.0.1:7009", "api_addr": "127.0.0.1:9009"}`
	wantAnswer(t, "operator add", call(api.Admin(), "POST", "/api/cluster/members", body, nil, time.Time{}), 503, noLeader)
	wantAnswer(t, "operator remove", call(api.Admin(), "DELETE", "/api/cluster/members/n1", "", nil, time.Time{}), 503, noLeader)
	wantAnswer(t, "internal ask", callFor(api.Internal(), "lonely", "POST", "/internal/asks/web", "", testSecret, time.Now()), 421, jsonError("this node is not the leader"))

	local := &askRecorder{}
	if err := (Asker{Node: lonely.node, Local: local}).Ask(context.Background(), "web"); !errors.Is(err, ErrNoLeader) {
		t.Errorf("Asker without a leader = %v, want ErrNoLeader", err)
	}
	if got := local.got(); len(got) != 0 {
		t.Errorf("a node that does not lead handed the ask to its own job: %v", got)
	}
	if strings.Contains(ac.logs.String(), "cluster member") {
		t.Errorf("a refused call logged a membership change:\n%s", ac.logs.String())
	}
}

// An admin write on a follower is served by the leader (path, query and body
// intact, its answer passed back); a read is served where it was asked; Gather
// reads every other node.
func TestAPI_ForwardWritesAndGather(t *testing.T) {
	ac := newAPICluster(t, 3)
	lead, _ := ac.waitAgreement(electionBound, ac.ids()...)
	fid := ac.followers(lead)[0]
	follower := ac.apis[fid]
	local := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "served locally: %s %s", r.Method, r.URL.RequestURI())
	})
	h := follower.ForwardWrites(local)
	rec := call(h, "POST", "/api/apps/a%20b/_sleep?force=true", `{"by":"ops"}`, nil, time.Now())
	want := "write " + lead.cfg.NodeID + ` POST /api/apps/a%20b/_sleep?force=true {"by":"ops"}`
	if rec.Code != http.StatusCreated || rec.Body.String() != want {
		t.Errorf("a write on follower %s: %d %q, want 201 %q", fid, rec.Code, rec.Body.String(), want)
	}
	if rec := call(h, "GET", "/api/apps", "", nil, time.Now()); rec.Body.String() != "served locally: GET /api/apps" {
		t.Errorf("a read on a follower: %q, want it served there", rec.Body.String())
	}
	if rec := call(ac.apis[lead.cfg.NodeID].ForwardWrites(local), "DELETE", "/api/apps/a/_hold", "", nil, time.Now()); rec.Body.String() != "served locally: DELETE /api/apps/a/_hold" {
		t.Errorf("a write on the leader: %q, want it served there", rec.Body.String())
	}
	// A forwarded write that reaches a follower's internal API is refused.
	ctx, cancel := context.WithTimeout(context.Background(), electionBound)
	defer cancel()
	other := ac.followers(lead)[1]
	code, body, err := ac.nodes[fid].node.Call(ctx, other, ac.apiAddr(other), "POST", "/internal/admin/api/apps/a/_sleep", nil)
	if err != nil || code != 421 {
		t.Errorf("a forwarded write on a follower: %d %q %v, want 421", code, body, err)
	}
	got := follower.Gather(ctx, "/internal/local/awake/a")
	var lines []string
	for _, b := range got {
		lines = append(lines, string(b))
	}
	slices.Sort(lines)
	var wantLines []string
	for _, id := range ac.ids() {
		if id != fid {
			wantLines = append(wantLines, "local "+id+" GET /awake/a ")
		}
	}
	slices.Sort(wantLines)
	if !slices.Equal(lines, wantLines) {
		t.Errorf("Gather from %s = %q, want %q (every other node)", fid, lines, wantLines)
	}
}
