package reaper

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
)

// The admin API's views over time: why an app is awake, its recent wakes, and the
// node's event stream.

// awakeTop is how many values of each kind the why-is-it-awake report lists.
const awakeTop = 10

func (a *AdminAPI) awake(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	local, ok := a.Engine.Awake(id, AwakeKeys)
	if !ok {
		httpjson.Error(w, http.StatusNotFound, "no route manages an app "+strconv.Quote(id))
		return
	}
	reports := []AwakeReport{local}
	if a.AwakeElsewhere != nil {
		reports = append(reports, a.AwakeElsewhere(r.Context(), id)...)
	}
	httpjson.Write(w, http.StatusOK, MergeAwake(reports, awakeTop))
}

// WakeView is one wake of an app, phase by phase.
type WakeView struct {
	WakeTimes
	Node    string          `json:"node,omitempty"`
	Phases  []PhaseDuration `json:"phases"`
	Seconds float64         `json:"seconds"`
}

// wakes lists the app's recent wakes from its history (?limit=, 20 by default,
// at most 100), newest first: one per wake, the entry that reached furthest.
func (a *AdminAPI) wakes(w http.ResponseWriter, r *http.Request) {
	limit := 20
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			httpjson.Error(w, http.StatusBadRequest, "limit must be a whole number from 1 to 100")
			return
		}
		limit = n
	}
	items, _, err := a.Store.History(r.Context(), r.PathValue("id"), 0, HistoryCap)
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, WakesAnswer{AppID: r.PathValue("id"), Wakes: wakesOf(items, limit)})
}

// wakesOf picks the wakes out of a history (newest first): of the entries of
// one wake (same ask), the one with the most phases, then the earliest first answer.
func wakesOf(items []Transition, limit int) []WakeView {
	out := []WakeView{}
	index := map[int64]int{}
	for _, t := range items {
		if t.Phases == nil { // a wake's entries: the change to Up, its first answers
			continue
		}
		v := WakeView{WakeTimes: *t.Phases, Node: t.Node, Phases: t.Phases.Durations(), Seconds: t.Phases.Total().Seconds()}
		key := t.Phases.AskedAt.UnixNano()
		i, seen := index[key]
		switch {
		case !seen:
			if len(out) == limit {
				continue
			}
			index[key] = len(out)
			out = append(out, v)
		case len(v.Phases) > len(out[i].Phases) ||
			(len(v.Phases) == len(out[i].Phases) && v.FirstAnswerAt.Before(out[i].FirstAnswerAt)):
			out[i] = v
		}
	}
	return out
}

// eventStream serves the node's events as server-sent events: the kept recent
// ones first (after Last-Event-ID or ?after= when given), then each new one, with
// a comment every 15 s to keep proxies from closing the stream. A stream that
// falls behind is closed; the client reconnects with Last-Event-ID.
func (a *AdminAPI) eventStream(w http.ResponseWriter, r *http.Request) {
	var after uint64
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if s == "" {
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "Last-Event-ID and after must be event ids (whole numbers), not "+strconv.Quote(s))
			return
		}
		after = n
	}
	recent, next, cancel, ok := a.Engine.OpenEvents(after)
	if !ok {
		w.Header().Set("Retry-After", "10")
		httpjson.Error(w, http.StatusServiceUnavailable, fmt.Sprintf("too many event streams open on this node (%d)", MaxEventStreams))
		return
	}
	defer cancel()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the listener's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	for _, ev := range recent {
		writeEvent(w, ev)
	}
	if rc.Flush() != nil {
		return
	}
	beat := time.NewTicker(15 * time.Second)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-next:
			if !ok {
				return
			}
			writeEvent(w, ev)
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func writeEvent(w http.ResponseWriter, ev Event) {
	data, _ := json.Marshal(ev)
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, data)
}

// prewake shows the app's learned visits (whether or not pre-wake is on for it:
// an operator can see what it would do before turning it on).
func (a *AdminAPI) prewake(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, ok := a.managed(w, id)
	if !ok {
		return
	}
	items, _, err := a.Store.History(r.Context(), id, 0, HistoryCap)
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	boot, _ := a.Engine.ETA(id)
	httpjson.Write(w, http.StatusOK, prewakeViewOf(id, m.Policy, items, boot, time.Now()))
}
