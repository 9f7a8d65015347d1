package tcproute

import (
	"sync/atomic"

	"github.com/reapergw/reaper/reaper"
)

// tally counts what a route's connections did, since reaper started: taken,
// reaped for being idle, closed without reaching the app, and the bytes of
// those that ended. Atomic: the admin API reads it while connections end.
type tally struct {
	accepted, reaped, refused atomic.Int64
	in, out                   atomic.Int64
}

// ended counts a connection that ended so (an End… value), with its bytes.
func (t *tally) ended(how string, in, out int64) {
	switch how {
	case EndIdle:
		t.reaped.Add(1)
	case EndFailTimeout, EndTooManyHeld, EndAppFailed, EndDialFailed:
		t.refused.Add(1)
	}
	t.in.Add(in)
	t.out.Add(out)
}

// Counts are a route's connections now on this node.
type Counts struct {
	Held    int64 // waiting for the app
	Spliced int64 // passing bytes to the app
}

// Counts returns the route id's connections now; false for an unknown route.
func (s *Server) Counts(id string) (Counts, bool) {
	for _, r := range s.routes {
		if r.cfg.ID == id {
			return Counts{Held: r.held.Load(), Spliced: r.spliced.Load()}, true
		}
	}
	return Counts{}, false
}

// Views are the routes as the admin API shows them (reaper.AdminAPI.TCPRoutes),
// in the configuration's order. It never blocks.
func (s *Server) Views() []reaper.TCPRouteView {
	out := make([]reaper.TCPRouteView, 0, len(s.routes))
	for _, r := range s.routes {
		v := reaper.TCPRouteView{
			ID: r.cfg.ID, AppID: r.cfg.AppID, Listen: r.cfg.Listen, Target: r.cfg.Target, Mode: r.cfg.Mode,
			Open: r.spliced.Load(), Held: r.held.Load(),
			Accepted: r.tally.accepted.Load(), Reaped: r.tally.reaped.Load(), Refused: r.tally.refused.Load(),
			BytesIn: r.tally.in.Load(), BytesOut: r.tally.out.Load(),
		}
		if r.ln != nil {
			v.Listen = r.ln.Addr().String()
		}
		if v.Mode == "" {
			v.Mode = ModeRequestResponse
		}
		if r.idle > 0 {
			v.IdleTimeout = r.idle.String()
		}
		out = append(out, v)
	}
	return out
}
