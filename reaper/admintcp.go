package reaper

import (
	"net/http"

	"github.com/reapergw/reaper/internal/httpjson"
)

// TCPRouteView is one TCP route (tcp_routes[]) as the admin API shows it: its
// configuration and its connections on this node (each node of a cluster
// listens on the route's port and counts its own).
type TCPRouteView struct {
	ID    string `json:"id"`
	AppID string `json:"app_id"`
	// Listen is the address the route accepts on (the port bound, when the
	// configuration asked for port 0).
	Listen string `json:"listen"`
	Target string `json:"target"`
	// Mode is request_response or keep_connections.
	Mode string `json:"mode"`
	// IdleTimeout closes a connection byte-idle that long (request_response);
	// absent: never.
	IdleTimeout string `json:"connection_idle_timeout,omitempty"`
	// Open are the connections spliced to the app now; Held wait for it.
	Open int64 `json:"open"`
	Held int64 `json:"held"`
	// Accepted counts the connections taken since reaper started; Reaped those
	// closed for being byte-idle; Refused those closed without reaching the
	// app (fail_timeout, max_held, the app in Error or not accepting).
	Accepted int64 `json:"accepted"`
	Reaped   int64 `json:"reaped"`
	Refused  int64 `json:"refused"`
	// BytesIn (client → app) and BytesOut (app → client) are the bytes of the
	// connections that ended since reaper started (an open connection's count
	// is added when it ends).
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// tcpRoutes lists the node's TCP routes, those of appID only when it is not
// empty; never nil.
func (a *AdminAPI) tcpRoutes(appID string) []TCPRouteView {
	out := []TCPRouteView{}
	if a.TCPRoutes == nil {
		return out
	}
	for _, v := range a.TCPRoutes() {
		if appID == "" || v.AppID == appID {
			out = append(out, v)
		}
	}
	return out
}

// listTCPRoutes serves GET /api/tcp_routes: every TCP route of this node.
func (a *AdminAPI) listTCPRoutes(w http.ResponseWriter, _ *http.Request) {
	httpjson.Write(w, http.StatusOK, a.tcpRoutes(""))
}
