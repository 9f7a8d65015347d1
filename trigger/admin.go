package trigger

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/reapergw/reaper/internal/httpjson"
)

// AdminPath is the admin API's list of the triggers (GET): what each did last,
// as the node that runs it knows.
const AdminPath = "/api/triggers"

// Answer is AdminPath's answer.
type Answer struct {
	Triggers []View `json:"triggers"`
}

// AdminHandler answers GET AdminPath with r's views, merged with the others'
// (in a cluster: the other nodes' local views, for the leader runs the polling
// triggers and every node the listening ones; nil on a single node).
func (r *Runner) AdminHandler(others func(ctx context.Context) [][]View) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var from [][]View
		if others != nil {
			from = others(req.Context())
		}
		httpjson.Write(w, http.StatusOK, Answer{Triggers: Merge(r.Views(), from)})
	})
}

// LocalHandler answers this node's own views (Views), for the others'
// AdminHandler.
func (r *Runner) LocalHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpjson.Write(w, http.StatusOK, r.Views())
	})
}

// DecodeViews decodes what LocalHandler answered; a body that is not views is
// left out (nil).
func DecodeViews(body []byte) []View {
	var v []View
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	return v
}

// Merge is own with each trigger's view taken from the node that knows it
// best: the one running it, else the one that looked last. A listening
// trigger, which every node runs, also lists each node's view (Nodes), with
// the nodes' fires summed. Triggers the others have and own has not (another
// configuration) are left out.
func Merge(own []View, others [][]View) []View {
	out := append([]View(nil), own...)
	for i := range out {
		all := []View{out[i]}
		for _, vs := range others {
			for _, v := range vs {
				if v.ID == out[i].ID {
					all = append(all, v)
				}
			}
		}
		for _, v := range all[1:] {
			if better(v, out[i]) {
				out[i] = v
			}
		}
		if out[i].Kind == KindPostgresNotify {
			out[i] = perNode(out[i], all)
		}
	}
	return out
}

// perNode is best, a listening trigger's best-informed view, with each node's
// view of all (one per node, in the order of their ids), the nodes' fires
// summed and the latest of their fires.
func perNode(best View, all []View) View {
	best.Nodes = make([]NodeView, 0, len(all))
	best.Fires, best.LastFire = 0, nil
	for _, v := range all {
		best.Nodes = append(best.Nodes, NodeView{Node: v.Node, Listening: v.Running, LastCheck: v.LastCheck,
			LastFire: v.LastFire, Fires: v.Fires, Failing: v.Failing, LastError: v.LastError})
		best.Fires += v.Fires
		if v.LastFire != nil && (best.LastFire == nil || v.LastFire.After(*best.LastFire)) {
			best.LastFire = v.LastFire
		}
	}
	slices.SortStableFunc(best.Nodes, func(a, b NodeView) int { return strings.Compare(a.Node, b.Node) })
	return best
}

// better reports whether a is a better-informed view of a trigger than b.
func better(a, b View) bool {
	if a.Running != b.Running {
		return a.Running
	}
	switch {
	case a.LastCheck == nil:
		return false
	case b.LastCheck == nil:
		return true
	}
	return a.LastCheck.After(*b.LastCheck)
}
