// Package builtin holds reaper's general-purpose plugins: headers (add, set and
// remove request and response headers) and ip_filter (allow and deny lists on the
// client address). Importing the package registers them.
package builtin

import "github.com/reapergw/reaper/plugin"

func init() {
	plugin.Register(plugin.Info{ID: HeadersID, New: func() plugin.Plugin { return new(Headers) }})
	plugin.Register(plugin.Info{ID: IPFilterID, New: func() plugin.Plugin { return new(IPFilter) }})
}
