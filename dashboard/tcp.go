package dashboard

import (
	"strings"

	"github.com/reapergw/reaper/reaper"
)

// joinRoutes lists route ids as a cell shows them.
func joinRoutes(ids []string) string { return strings.Join(ids, ", ") }

// tcpCounts sums the open and held connections of TCP routes.
func tcpCounts(routes []reaper.TCPRouteView) (open, held int64) {
	for _, r := range routes {
		open += r.Open
		held += r.Held
	}
	return open, held
}
