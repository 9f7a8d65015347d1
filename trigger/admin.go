package trigger

import (
	"context"
	"encoding/json"
	"net/http"

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
// triggers; nil on a single node).
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
// best: the one running it, else the one that looked last. Triggers the others
// have and own has not (another configuration) are left out.
func Merge(own []View, others [][]View) []View {
	out := append([]View(nil), own...)
	for i := range out {
		for _, vs := range others {
			for _, v := range vs {
				if v.ID == out[i].ID && better(v, out[i]) {
					out[i] = v
				}
			}
		}
	}
	return out
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
