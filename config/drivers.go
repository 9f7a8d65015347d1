package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/reapergw/reaper/internal/conf"
	"go.yaml.in/yaml/v3"
)

// Drivers is paas.driver: one driver's name (driver: process), or a list of
// them (driver: [process, docker]) whose apps one node serves side by side. It
// holds the names joined by "+" ("process+docker"), in the file's order, which is
// also the driver label of the metrics; compare it with a name when only one is
// given, and ask Has and Names otherwise.
type Drivers string

// Names returns the listed drivers, in the file's order.
func (d Drivers) Names() []string {
	if d == "" {
		return nil
	}
	return strings.Split(string(d), "+")
}

// Has reports whether the driver name is listed.
func (d Drivers) Has(name string) bool { return slices.Contains(d.Names(), name) }

// Multi reports whether more than one driver is listed.
func (d Drivers) Multi() bool { return len(d.Names()) > 1 }

// describe says which drivers are listed, for the messages: "the driver is x"
// or "the drivers are x, y".
func (d Drivers) describe() string {
	if d.Multi() {
		return "the drivers are " + strings.Join(d.Names(), ", ")
	}
	return "the driver is " + string(d)
}

// UnmarshalConf decodes a name or a list of names. A name is checked with the
// other sections (checkDriver), so that its message is the same as ever; the
// names of a list are checked here, each at its own path.
func (d *Drivers) UnmarshalConf(dec *conf.Decoder, n *yaml.Node, path string, errs *conf.Errors) {
	if n.Kind != yaml.SequenceNode {
		var s string
		dec.Decode(n, &s, path, errs)
		if strings.Contains(s, "+") {
			errs.Add(path, "%s is not a driver (list several as [process, docker])", strconv.Quote(s))
			return
		}
		*d = Drivers(s)
		return
	}
	var names []string
	dec.Decode(n, &names, path, errs)
	if len(names) == 0 {
		errs.Add(path, "must name at least one driver (process, clevercloud, docker or kubernetes)")
		return
	}
	seen := map[string]int{}
	var kept []string
	for i, name := range names {
		switch j, dup := seen[name]; {
		case !slices.Contains(knownDrivers, name):
			errs.Add(conf.Index(path, i), "%s is not a driver (use process, clevercloud, docker or kubernetes)", strconv.Quote(name))
		case dup:
			errs.Add(conf.Index(path, i), "%s is already listed at %s", strconv.Quote(name), conf.Index(path, j))
		default:
			seen[name] = i
			kept = append(kept, name)
		}
	}
	*d = Drivers(strings.Join(kept, "+"))
}

// knownDrivers are the drivers reaper has.
var knownDrivers = []string{DriverProcess, DriverCleverCloud, DriverDocker, DriverKubernetes}
