package dashboard

import (
	"net/http"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/internal/httpjson"
)

// HeldHandler serves this node's held requests per app as a NodeHeld, read
// from api, the node's own admin API handler (one that answers for this node:
// not forwarded). In a cluster, the other nodes' dashboards gather it through
// the cluster's internal API, so that each shows the held requests of every node.
func HeldHandler(node string, api http.Handler) http.Handler {
	c := adminapi.InProcess(api, "held")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apps, err := c.Apps(r.Context())
		if err != nil {
			httpjson.Error(w, http.StatusServiceUnavailable, "the apps cannot be read: "+errText(err))
			return
		}
		out := NodeHeld{Node: node, Held: map[string]int{}}
		for _, a := range apps {
			if a.Held > 0 {
				out.Held[a.AppID] = a.Held
			}
		}
		httpjson.Write(w, http.StatusOK, out)
	})
}
