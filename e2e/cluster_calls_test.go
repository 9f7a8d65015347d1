package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/leader"
)

// What the cluster tests ask of the nodes and the apps, and wait for.

// status is GET /api/cluster?probe=false (the Raft view, at once) on the node's
// admin listener.
func (e *clusterEnv) status(n *clusterNode) (leader.Status, error) {
	return e.clusterStatus(n, "/api/cluster?probe=false")
}

// clusterStatus is GET path, one of /api/cluster's, on the node's admin listener.
func (e *clusterEnv) clusterStatus(n *clusterNode, path string) (leader.Status, error) {
	var st leader.Status
	req, _ := http.NewRequest("GET", e.adminURL(n, path), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return st, json.Unmarshal(body, &st)
}

// waitLeader waits until every node of nodes answers with the same leader (not
// notID), in the same term, with that leader saying it leads and no other node
// saying so, and returns the leader's status.
func (e *clusterEnv) waitLeader(nodes []*clusterNode, limit time.Duration, notID string) leader.Status {
	e.t.Helper()
	var lead leader.Status
	var last []string
	testwait.For(e.t, limit, "one leader agreed on by every node", func() bool {
		last = last[:0]
		sts := map[string]leader.Status{}
		for _, n := range nodes {
			st, err := e.status(n)
			if err != nil {
				last = append(last, n.id+": "+err.Error())
				return false
			}
			sts[n.id] = st
			last = append(last, fmt.Sprintf("%s: %s term %d leader %q", n.id, st.State, st.Term, st.LeaderID))
		}
		first := sts[nodes[0].id]
		if first.LeaderID == "" || first.LeaderID == notID {
			return false
		}
		leaders := 0
		for _, st := range sts {
			if st.LeaderID != first.LeaderID || st.Term != first.Term {
				return false
			}
			if st.State == leader.StateLeader {
				leaders++
				if st.ID != first.LeaderID {
					return false
				}
			}
		}
		lead = sts[first.LeaderID]
		return leaders == 1 && lead.State == leader.StateLeader
	})
	e.t.Logf("leader %s, term %d (%s)", lead.ID, lead.Term, strings.Join(last, "; "))
	return lead
}

// appStatus is the app's status as the node gives it through the status header.
func (e *clusterEnv) appStatus(n *clusterNode, name string) string {
	resp, err := n.p.request("GET", name+".test", "/", nil, "CleverCloud-Reaper", "status")
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer resp.Body.Close()
	var st struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return fmt.Sprintf("status request answered %d", resp.StatusCode)
	}
	return st.Status
}

// waitAppStatus waits until every node of nodes says the app is in status.
func (e *clusterEnv) waitAppStatus(nodes []*clusterNode, name, status string, limit time.Duration) {
	e.t.Helper()
	testwait.For(e.t, limit, name+" "+status+" on every node", func() bool {
		for _, n := range nodes {
			if e.appStatus(n, name) != status {
				return false
			}
		}
		return true
	})
}

// heldResult is what a request sent through a node got.
type heldResult struct {
	node  string
	code  int
	appID string // the app id of the fake's answer, when it is the app's 200
	body  string
	err   error
	at    time.Time // when the answer came
}

var holdClient = &http.Client{Timeout: 90 * time.Second}

// get sends an API request for the app through the node; written, when not nil,
// is closed once the request is on the wire.
func (e *clusterEnv) get(n *clusterNode, name string, written chan<- struct{}) heldResult {
	r := heldResult{node: n.id}
	req, _ := http.NewRequest("GET", n.p.url("/"), nil)
	req.Host = name + ".test"
	req.Header.Set("Accept", "application/json")
	if written != nil {
		var once sync.Once
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) },
		}))
	}
	resp, err := holdClient.Do(req)
	r.at = time.Now()
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r.code, r.body, r.err = resp.StatusCode, string(b), err
	if resp.StatusCode == 200 {
		var ans struct {
			AppID string `json:"app_id"`
		}
		_ = json.Unmarshal(b, &ans)
		r.appID = ans.AppID
	}
	return r
}

// getAll sends perNode requests for the app through each node at once, and
// returns a channel that receives every result; it returns once every request is
// on the wire.
func (e *clusterEnv) getAll(nodes []*clusterNode, name string, perNode int) <-chan heldResult {
	out := make(chan heldResult, len(nodes)*perNode)
	var wrote []chan struct{}
	for _, n := range nodes {
		for range perNode {
			w := make(chan struct{})
			wrote = append(wrote, w)
			go func() { out <- e.get(n, name, w) }()
		}
	}
	for _, w := range wrote {
		select {
		case <-w:
		case <-time.After(10 * time.Second):
			e.t.Fatalf("a request for %s could not be sent", name)
		}
	}
	return out
}

// expectApp receives n results and checks that each is the app's own 200.
func (e *clusterEnv) expectApp(results <-chan heldResult, n int, name string, limit time.Duration) []heldResult {
	e.t.Helper()
	var got []heldResult
	deadline := time.After(limit)
	for range n {
		select {
		case r := <-results:
			if r.err != nil || r.code != 200 || r.appID != e.ids[name] {
				e.t.Errorf("request through %s: %d %q %v, want the app's 200", r.node, r.code, r.body, r.err)
			}
			got = append(got, r)
		case <-deadline:
			e.t.Fatalf("only %d of %d requests for %s answered after %v", len(got), n, name, limit)
		}
	}
	return got
}

// apiCalls counts the fake's API calls for the app with that method on a path
// ending with suffix.
func (e *clusterEnv) apiCalls(name, method, suffix string) int {
	n := 0
	for _, c := range e.fake.Calls() {
		if c.App == e.ids[name] && c.Method == method && strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

// checkOneStart checks that the platform saw exactly one start of the app and no
// restart.
func (e *clusterEnv) checkOneStart(name string) {
	e.t.Helper()
	id := e.ids[name]
	if n := e.fake.Starts(id); n != 1 {
		e.t.Errorf("%s: %d starts at the platform, want exactly 1", name, n)
	}
	if n := e.fake.Restarts(id); n != 0 {
		e.t.Errorf("%s: %d restarts at the platform, want none", name, n)
	}
}

// adminInFlight is the in-flight count of GET /api/apps/{id} on the node's admin
// API, -1 when it cannot be read.
func (e *clusterEnv) adminInFlight(n *clusterNode, name string) int {
	req, _ := http.NewRequest("GET", e.adminURL(n, "/api/apps/"+e.ids[name]), nil)
	req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
	resp, err := e.admin.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var v struct {
		InFlight int `json:"in_flight"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return -1
	}
	return v.InFlight
}

// reaperCLI runs the reaper binary and returns its standard output.
func reaperCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	stdout, stderr, code := runReaperCLI(t, args...)
	if code != 0 {
		return stdout, fmt.Errorf("reaper %s: exit status %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout, nil
}

// reaperCLIExit runs the reaper command and returns what it printed (stdout,
// then stderr) and its exit status.
func reaperCLIExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	stdout, stderr, code := runReaperCLI(t, args...)
	return stdout + stderr, code
}

func runReaperCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.reaper, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("reaper %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// internalCall posts to a node's internal API, signed with secret when it is not
// empty.
func internalCall(t *testing.T, n *clusterNode, path, secret string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+n.apiAddr+path, nil)
	if secret != "" {
		leader.Sign(req, nil, []byte(secret), n.id, time.Now())
	}
	resp, err := clusterClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
