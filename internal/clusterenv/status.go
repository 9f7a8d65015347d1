package clusterenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Status is GET /api/cluster on a node's admin listener.
type Status struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Term     uint64 `json:"term"`
	LeaderID string `json:"leader_id"`
	Members  []struct {
		ID     string `json:"id"`
		Voter  bool   `json:"voter"`
		Leader bool   `json:"leader"`
	} `json:"members"`
}

// ErrAdminAPI reports a call to a node's admin API that failed.
var ErrAdminAPI = errors.New("clusterenv: admin API")

// AdminGet sends GET path to n's admin API with the admin token and decodes its
// 200 JSON answer into v.
func (c *Cluster) AdminGet(ctx context.Context, n *Node, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.APIAddr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	resp, err := c.admin.Do(req)
	if err != nil {
		return fmt.Errorf("%w: GET %s on %s: %w", ErrAdminAPI, path, n.ID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%w: GET %s on %s: %w", ErrAdminAPI, path, n.ID, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s on %s: %d %.200s", ErrAdminAPI, path, n.ID, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: GET %s on %s: %w", ErrAdminAPI, path, n.ID, err)
	}
	return nil
}

// Status returns n's view of the cluster (GET /api/cluster).
func (c *Cluster) Status(ctx context.Context, n *Node) (Status, error) {
	var st Status
	err := c.AdminGet(ctx, n, "/api/cluster?probe=false", &st) // the Raft view, at once
	return st, err
}

// Whole reports whether the statuses, one per node, show a whole cluster: every
// node names the same leader in the same term, that leader alone says it leads,
// and every node lists size voters.
func Whole(sts []Status, size int) (leaderID string, term uint64, ok bool) {
	if len(sts) != size || sts[0].LeaderID == "" {
		return "", 0, false
	}
	leaderID, term = sts[0].LeaderID, sts[0].Term
	leaders := 0
	for _, st := range sts {
		if st.LeaderID != leaderID || st.Term != term {
			return "", 0, false
		}
		if st.State == "leader" {
			leaders++
			if st.ID != leaderID {
				return "", 0, false
			}
		}
		voters := 0
		for _, m := range st.Members {
			if m.Voter {
				voters++
			}
		}
		if voters != size || len(st.Members) != size {
			return "", 0, false
		}
	}
	return leaderID, term, leaders == 1
}

// WaitWhole polls every node until the cluster is whole and returns its leader
// and term.
func (c *Cluster) WaitWhole(ctx context.Context, timeout time.Duration) (*Node, uint64, error) {
	deadline := time.Now().Add(timeout)
	var last []string
	for {
		last = last[:0]
		var sts []Status
		for _, n := range c.Nodes {
			st, err := c.Status(ctx, n)
			if err != nil {
				last = append(last, err.Error())
				continue
			}
			sts = append(sts, st)
			last = append(last, fmt.Sprintf("%s: %s, term %d, leader %q, %d members", st.ID, st.State, st.Term, st.LeaderID, len(st.Members)))
		}
		if id, term, ok := Whole(sts, len(c.Nodes)); ok {
			return c.Node(id), term, nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("clusterenv: the cluster is not whole (one leader, %d voters) after %s: %s", len(c.Nodes), timeout, strings.Join(last, "; "))
		}
		if !SleepCtx(ctx, 20*time.Millisecond) { // poll interval
			return nil, 0, ctx.Err()
		}
	}
}

// WaitAllStatus waits until every node gives the app behind each host the
// status want (asked with the CleverCloud-Reaper: status header, which is never
// traffic and never wakes an app).
func (c *Cluster) WaitAllStatus(ctx context.Context, hosts []string, want string, timeout time.Duration) error {
	hc := NewClient(5 * time.Second)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for _, n := range c.Nodes {
		for _, h := range hosts {
			if err := WaitStatus(ctx, hc, n.Gateway, h, want, time.Until(deadline)); err != nil {
				return fmt.Errorf("on %s: %w", n.ID, err)
			}
		}
	}
	return nil
}
