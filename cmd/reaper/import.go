package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func importCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import-otoroshi", "import-otoroshi FILE", stdout, stderr)
	files, err := parseArgs(fs, args, stdout, 0, -1)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "reaper import-otoroshi: give one file: an Otoroshi route export (JSON, one route or a list)")
		return exitCode(2)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		fmt.Fprintln(stderr, "reaper import-otoroshi:", err)
		return exitCode(1)
	}
	out, skipped, err := importOtoroshi(data)
	if err != nil {
		fmt.Fprintf(stderr, "reaper import-otoroshi: %s: %v\n", files[0], err)
		return exitCode(1)
	}
	for _, s := range skipped {
		fmt.Fprintln(stderr, "not imported:", s)
	}
	_, err = stdout.Write(out)
	return err
}

// otoRoute is the part of an Otoroshi route export that reaper reads.
type otoRoute struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Enabled  *bool  `json:"enabled"`
	Frontend struct {
		Domains   []string          `json:"domains"`
		StripPath *bool             `json:"strip_path"`
		Methods   []string          `json:"methods"`
		Headers   map[string]string `json:"headers"`
	} `json:"frontend"`
	Backend struct {
		Root    string      `json:"root"`
		Targets []otoTarget `json:"targets"`
	} `json:"backend"`
	Plugins []otoPlugin `json:"plugins"`
}

// otoTarget is one of an Otoroshi route's backend targets.
type otoTarget struct {
	Hostname string `json:"hostname"`
	Port     int    `json:"port"`
	TLS      bool   `json:"tls"`
	Weight   int    `json:"weight"`
}

// otoPlugin is one of the plugins of an Otoroshi route.
type otoPlugin struct {
	Plugin  string         `json:"plugin"`
	Enabled *bool          `json:"enabled"`
	Include []string       `json:"include"`
	Exclude []string       `json:"exclude"`
	Config  map[string]any `json:"config"`
}

// importOtoroshi turns an export into reaper's routes YAML. It returns the
// plugins it could not carry over, one line each.
func importOtoroshi(data []byte) ([]byte, []string, error) {
	routes, err := parseOtoroshi(data)
	if err != nil {
		return nil, nil, err
	}
	var skipped []string
	out := make([]map[string]any, 0, len(routes))
	for i, r := range routes {
		if r.ID == "" {
			return nil, nil, fmt.Errorf("route %d has no id", i)
		}
		route, notImported := importRoute(r)
		skipped = append(skipped, notImported...)
		out = append(out, route)
	}
	yml, err := encodeRoutes(out)
	if err != nil {
		return nil, nil, err
	}
	return yml, skipped, nil
}

// parseOtoroshi reads an export: a list of routes, or one route.
func parseOtoroshi(data []byte) ([]otoRoute, error) {
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var routes []otoRoute
		if err := json.Unmarshal(trimmed, &routes); err != nil {
			return nil, fmt.Errorf("not an Otoroshi route list: %w", err)
		}
		return routes, nil
	}
	var r otoRoute
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, fmt.Errorf("not an Otoroshi route: %w", err)
	}
	return []otoRoute{r}, nil
}

// importRoute turns one Otoroshi route into a reaper route, leaving out what
// says the default (a name equal to the id, enabled: true). It returns the
// plugins it could not carry over, one line each.
func importRoute(r otoRoute) (map[string]any, []string) {
	route := map[string]any{"id": r.ID}
	if r.Name != "" && r.Name != r.ID {
		route["name"] = r.Name
	}
	if r.Enabled != nil && !*r.Enabled {
		route["enabled"] = false
	}
	route["frontend"] = importFrontend(r)
	route["backend"] = importBackend(r)
	plugins, skipped := importPlugins(r)
	if len(plugins) > 0 {
		route["plugins"] = plugins
	}
	return route, skipped
}

// importFrontend carries the route's frontend over; strip_path only when it is
// off, reaper's default being on.
func importFrontend(r otoRoute) map[string]any {
	fe := map[string]any{"domains": r.Frontend.Domains}
	if r.Frontend.StripPath != nil && !*r.Frontend.StripPath {
		fe["strip_path"] = false
	}
	if len(r.Frontend.Methods) > 0 {
		fe["methods"] = r.Frontend.Methods
	}
	if len(r.Frontend.Headers) > 0 {
		fe["headers"] = r.Frontend.Headers
	}
	return fe
}

// importBackend carries the route's backend over: each target as a URL, or as
// a URL and a weight when it weighs more than one; the root unless it is "/".
func importBackend(r otoRoute) map[string]any {
	var targets []any
	for _, t := range r.Backend.Targets {
		if t.Weight > 1 {
			targets = append(targets, map[string]any{"url": t.url(), "weight": t.Weight})
		} else {
			targets = append(targets, t.url())
		}
	}
	be := map[string]any{"targets": targets}
	if r.Backend.Root != "" && r.Backend.Root != "/" {
		be["root"] = r.Backend.Root
	}
	return be
}

// url is the target's URL, without its port when it is the scheme's default.
func (t otoTarget) url() string {
	scheme := "http"
	if t.TLS {
		scheme = "https"
	}
	u := scheme + "://" + t.Hostname
	if t.Port != 0 && !(t.TLS && t.Port == 443) && !(!t.TLS && t.Port == 80) {
		u += ":" + strconv.Itoa(t.Port)
	}
	return u
}

// importPlugins carries the route's reaper plugins over (any plugin whose name
// says reaper), with their config translated by reaperConfig. It returns the
// other plugins, which reaper has no equivalent of, one line each.
func importPlugins(r otoRoute) ([]any, []string) {
	var plugins []any
	var skipped []string
	for _, p := range r.Plugins {
		if !strings.Contains(strings.ToLower(p.Plugin), "reaper") {
			skipped = append(skipped, fmt.Sprintf("route %s: plugin %s (reaper has no equivalent; add what you need by hand)", r.ID, p.Plugin))
			continue
		}
		entry := map[string]any{"plugin": "reaper", "config": reaperConfig(p.Config)}
		if p.Enabled != nil && !*p.Enabled {
			entry["enabled"] = false
		}
		if len(p.Include) > 0 {
			entry["include"] = p.Include
		}
		if len(p.Exclude) > 0 {
			entry["exclude"] = p.Exclude
		}
		plugins = append(plugins, entry)
	}
	return plugins, skipped
}

// encodeRoutes writes the routes as reaper's routes YAML, under a comment that
// says where they come from.
func encodeRoutes(routes []map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# Imported from an Otoroshi route export. Check it with: reaper check --config FILE\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"routes": routes}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// reaperKeys maps the reference plugin's keys (snake or camel case) to reaper's.
var reaperKeys = map[string]string{
	"app_id": "app_id", "appId": "app_id",
	"owner_id": "owner_id", "ownerId": "owner_id",
	"grace_period": "grace_period", "gracePeriod": "grace_period",
	"fail_timeout": "fail_timeout", "failTimeout": "fail_timeout",
	"allow_waiting_page": "allow_waiting_page", "allowWaitingPage": "allow_waiting_page",
	"api_behavior": "api_behavior", "apiBehavior": "api_behavior",
	"ready_delay": "ready_delay", "readyDelay": "ready_delay",
	"must_be_up_at": "must_be_up_at", "mustBeUpAt": "must_be_up_at",
	"timezone":           "timezone",
	"monitoring_filters": "monitoring_filters", "monitoringFilters": "monitoring_filters",
	"waiting_page": "waiting_page", "waitingPage": "waiting_page",
}

var durationKeys = map[string]bool{"grace_period": true, "fail_timeout": true, "ready_delay": true}

// reaperConfig carries the reference plugin's config over: same keys, durations
// from seconds to reaper's syntax, unknown keys kept so that `reaper check` names
// them.
func reaperConfig(in map[string]any) map[string]any {
	out := map[string]any{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		name, ok := reaperKeys[k]
		if !ok {
			name = k
		}
		if f, isNum := v.(float64); isNum && durationKeys[name] {
			v = formatSeconds(f)
		}
		if v == nil || v == "" {
			continue
		}
		out[name] = v
	}
	return out
}

// formatSeconds writes a number of seconds the short way: 3600 → 1h, 90 → 1m30s.
func formatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	str := d.String()
	if strings.HasSuffix(str, "m0s") {
		str = strings.TrimSuffix(str, "0s")
	}
	if strings.HasSuffix(str, "h0m") {
		str = strings.TrimSuffix(str, "0m")
	}
	return str
}
