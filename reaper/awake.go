package reaper

import (
	"cmp"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Why is it awake? Per app and per node, since the app last woke: the client
// addresses, paths and user agents of the requests that moved its idle clock, in
// bounded counters, so that an operator sees that a health checker, a crawler or
// the app's own cron keeps it up. In memory only; the admin API merges the nodes'.

// Bounds of the counters.
const (
	AwakeKeys      = 64   // distinct values kept per kind
	awakeExact     = 4096 // requests counted one by one after a wake; then one in awakeSampleEvery
	awakeSampleOne = 16
	awakeValueMax  = 160 // bytes kept of a path or a user agent
)

// topCounter counts values, keeping at most AwakeKeys of them: a new value when
// it is full takes the place of the least counted one and starts from its count
// (the space-saving rule: a frequent value cannot be pushed out by a flood of
// rare ones, and no count is ever under its true value).
type topCounter map[string]int64

func (c topCounter) add(v string, n int64) {
	if _, ok := c[v]; ok || len(c) < AwakeKeys {
		c[v] += n
		return
	}
	var minKey string
	minCount := int64(-1)
	for k, cnt := range c {
		if minCount < 0 || cnt < minCount || (cnt == minCount && k < minKey) {
			minKey, minCount = k, cnt
		}
	}
	delete(c, minKey)
	c[v] = minCount + n
}

// AwakeCount is one value and how many requests carried it (an estimate once
// sampling began).
type AwakeCount struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// AwakeReport says who kept an app awake since it last woke, on one node or
// merged over several.
type AwakeReport struct {
	AppID string    `json:"app_id"`
	Since time.Time `json:"since"`
	// Requests is how many requests moved the idle clock (estimated once sampled).
	Requests int64 `json:"requests"`
	// Sampled: past the first awakeExact requests, one in awakeSampleOne was
	// counted (with its weight): counts are estimates.
	Sampled    bool         `json:"sampled"`
	Nodes      []string     `json:"nodes"`
	Clients    []AwakeCount `json:"clients"`
	Paths      []AwakeCount `json:"paths"`
	UserAgents []AwakeCount `json:"user_agents"`
}

// appAwake is one app's counters on this node.
type appAwake struct {
	seen atomic.Int64 // requests since the reset, sampled or not

	mu                     sync.Mutex
	since                  time.Time
	weight                 int64 // requests the counters stand for
	clients, paths, agents topCounter
}

func (w *appAwake) reset(now time.Time) {
	w.mu.Lock()
	w.since, w.weight = now, 0
	w.clients, w.paths, w.agents = topCounter{}, topCounter{}, topCounter{}
	w.seen.Store(0)
	w.mu.Unlock()
}

// note counts a request that moved the idle clock: its client, and its path
// and user agent, which what says (nil: none), called only for a request that
// is counted. Past awakeExact requests only one in awakeSampleOne, drawn at
// random (a periodic client cannot fall between the samples), takes the lock,
// counted for awakeSampleOne.
func (w *appAwake) note(client netip.Addr, what func() (path, agent string)) {
	n := w.seen.Add(1)
	weight := int64(1)
	if n > awakeExact {
		if rand.Uint32()%awakeSampleOne != 0 {
			return
		}
		weight = awakeSampleOne
	}
	var path, agent string
	if what != nil {
		path, agent = what()
	}
	addr, path, agent := client.String(), clip(path), clip(agent)
	w.mu.Lock()
	if w.clients == nil {
		w.clients, w.paths, w.agents = topCounter{}, topCounter{}, topCounter{}
	}
	w.weight += weight
	w.clients.add(addr, weight)
	w.paths.add(path, weight)
	w.agents.add(agent, weight)
	w.mu.Unlock()
}

func clip(s string) string {
	if len(s) > awakeValueMax {
		return s[:awakeValueMax]
	}
	return s
}

// report copies the counters.
func (w *appAwake) report(appID, node string, top int) AwakeReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	return AwakeReport{
		AppID: appID, Since: w.since, Requests: w.weight, Sampled: w.seen.Load() > awakeExact,
		Nodes: []string{node}, Clients: topOf(w.clients, top), Paths: topOf(w.paths, top), UserAgents: topOf(w.agents, top),
	}
}

// topOf returns the n most counted values, most first (ties by value).
func topOf(c topCounter, n int) []AwakeCount {
	out := make([]AwakeCount, 0, len(c))
	for v, cnt := range c {
		out = append(out, AwakeCount{v, cnt})
	}
	sortCounts(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func sortCounts(cs []AwakeCount) {
	slices.SortFunc(cs, func(a, b AwakeCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Value, b.Value)
	})
}

// MergeAwake merges the reports of several nodes on one app: counts summed, the
// n most counted values kept, since the earliest reset.
func MergeAwake(reports []AwakeReport, n int) AwakeReport {
	var out AwakeReport
	clients, paths, agents := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for i, r := range reports {
		if i == 0 || (!r.Since.IsZero() && (out.Since.IsZero() || r.Since.Before(out.Since))) {
			out.Since = r.Since
		}
		out.AppID = r.AppID
		out.Requests += r.Requests
		out.Sampled = out.Sampled || r.Sampled
		out.Nodes = append(out.Nodes, r.Nodes...)
		for _, pair := range []struct {
			into map[string]int64
			from []AwakeCount
		}{{clients, r.Clients}, {paths, r.Paths}, {agents, r.UserAgents}} {
			for _, c := range pair.from {
				pair.into[c.Value] += c.Count
			}
		}
	}
	out.Clients, out.Paths, out.UserAgents = topOf(clients, n), topOf(paths, n), topOf(agents, n)
	if out.Nodes == nil {
		out.Nodes = []string{}
	}
	return out
}

// Awake returns this node's report on why the app is awake, with its n most
// counted values of each kind; ok is false for an app the node does not know.
func (e *Engine) Awake(appID string, n int) (AwakeReport, bool) {
	a := e.app(appID)
	if a == nil {
		return AwakeReport{}, false
	}
	return a.awake.report(appID, e.opts.Node, n), true
}
