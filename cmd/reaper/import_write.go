package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/reapergw/reaper/paas/clevercloud"
)

// importer builds the configuration, route by route, in the order of
// docs/configuration.md (import_test.go checks the output against it).
type importer struct {
	routes []*yaml.Node
	apps   []string            // the Clever Cloud apps the routes name or guess, in order
	users  map[string][]string // app id → the routes that use it
	byHost []string            // routes whose app is looked up by their domains
	notes  []string
}

// field is one key of a mapping, with an optional line comment.
type field struct {
	key     string
	value   any // a *yaml.Node, or a value to encode
	comment string
}

// mapping makes a mapping node of fields, in their order.
func mapping(fields ...field) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range fields {
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: f.key}
		v, ok := f.value.(*yaml.Node)
		if !ok {
			v = valueNode(f.value, nil)
		}
		v.LineComment = f.comment
		n.Content = append(n.Content, k, v)
	}
	return n
}

// valueNode encodes v; the keys of a map come in the order of order, then the
// others sorted, and so do the maps of a list.
func valueNode(v any, order []string) *yaml.Node {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return keyRank(order, a, b) })
		fields := make([]field, 0, len(keys))
		for _, k := range keys {
			fields = append(fields, field{key: k, value: valueNode(v[k], nil)})
		}
		return mapping(fields...)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, item := range v {
			n.Content = append(n.Content, valueNode(item, order))
		}
		return n
	}
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		// Every value here comes from JSON or YAML: it encodes.
		panic(fmt.Sprintf("import-otoroshi: cannot encode %T: %v", v, err))
	}
	return n
}

// keyRank orders keys by their place in order; keys not in it come after, sorted.
func keyRank(order []string, a, b string) int {
	ia, ib := slices.Index(order, a), slices.Index(order, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(a, b)
}

// route carries one Otoroshi route over, leaving out what says the default (a
// name equal to the id, enabled: true).
func (im *importer) route(r otoRoute) {
	fields := []field{{key: "id", value: r.ID}}
	if r.Name != "" && r.Name != r.ID {
		fields = append(fields, field{key: "name", value: r.Name})
	}
	if r.Enabled != nil && !*r.Enabled {
		fields = append(fields, field{key: "enabled", value: false})
	}
	fields = append(fields, field{key: "frontend", value: importFrontend(r)}, field{key: "backend", value: importBackend(r)})
	if plugins := im.plugins(r); len(plugins.Content) > 0 {
		fields = append(fields, field{key: "plugins", value: plugins})
	}
	im.routes = append(im.routes, mapping(fields...))
}

// importFrontend carries the route's frontend over; strip_path only when it is
// off, reaper's default being on.
func importFrontend(r otoRoute) *yaml.Node {
	fields := []field{{key: "domains", value: r.Frontend.Domains}}
	if r.Frontend.StripPath != nil && !*r.Frontend.StripPath {
		fields = append(fields, field{key: "strip_path", value: false})
	}
	if len(r.Frontend.Methods) > 0 {
		fields = append(fields, field{key: "methods", value: r.Frontend.Methods})
	}
	if len(r.Frontend.Headers) > 0 {
		fields = append(fields, field{key: "headers", value: r.Frontend.Headers})
	}
	return mapping(fields...)
}

// importBackend carries the route's backend over: each target as a URL, or as
// a URL and a weight when it weighs more than one; the root unless it is "/".
func importBackend(r otoRoute) *yaml.Node {
	targets := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range r.Backend.Targets {
		if t.Weight > 1 {
			targets.Content = append(targets.Content, mapping(field{key: "url", value: t.url()}, field{key: "weight", value: t.Weight}))
		} else {
			targets.Content = append(targets.Content, valueNode(t.url(), nil))
		}
	}
	fields := []field{{key: "targets", value: targets}}
	if r.Backend.Root != "" && r.Backend.Root != "/" {
		fields = append(fields, field{key: "root", value: r.Backend.Root})
	}
	return mapping(fields...)
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

// plugins carries the route's reaper plugins over (any plugin whose name says
// reaper), with their config translated by reaperConfig. OverrideHost is
// dropped without a word: reaper always sends the target's host. Any other
// plugin has no equivalent, and is named in a note.
func (im *importer) plugins(r otoRoute) *yaml.Node {
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, p := range r.Plugins {
		name := strings.ToLower(p.Plugin)
		switch {
		case strings.HasSuffix(name, ".overridehost"):
			continue
		case !strings.Contains(name, "reaper"):
			im.notes = append(im.notes, fmt.Sprintf("not imported: route %s: plugin %s (reaper has no equivalent; add what you need by hand)", r.ID, p.Plugin))
			continue
		}
		fields := []field{{key: "plugin", value: "reaper"}}
		if p.Enabled != nil && !*p.Enabled {
			fields = append(fields, field{key: "enabled", value: false})
		}
		if len(p.Include) > 0 {
			fields = append(fields, field{key: "include", value: p.Include})
		}
		if len(p.Exclude) > 0 {
			fields = append(fields, field{key: "exclude", value: p.Exclude})
		}
		fields = append(fields, field{key: "config", value: im.reaperConfig(r, p.Config)})
		list.Content = append(list.Content, mapping(fields...))
	}
	return list
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

// reaperOrder is the order of the reaper plugin's keys in docs/configuration.md;
// rangeOrder and filterOrder that of the items of must_be_up_at and
// monitoring_filters.
var (
	reaperOrder = []string{"app_id", "owner_id", "grace_period", "fail_timeout", "allow_waiting_page", "api_behavior",
		"ready_delay", "must_be_up_at", "timezone", "prewake", "monitoring_filters", "waiting_page",
		"waiting_page_file", "allow_preview", "max_held"}
	rangeOrder  = []string{"days", "start", "end"}
	filterOrder = []string{"source", "name", "regex"}
)

var durationKeys = map[string]bool{"grace_period": true, "fail_timeout": true, "ready_delay": true}

// reaperConfig carries the reference plugin's config over: same keys, durations
// from seconds to reaper's syntax, the retired client_poll as hold, unknown keys
// kept so that `reaper check` names them. It notes the route's app.
func (im *importer) reaperConfig(r otoRoute, in map[string]any) *yaml.Node {
	out := map[string]any{}
	for k, v := range in {
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
	comment := ""
	if out["api_behavior"] == "client_poll" {
		out["api_behavior"] = "hold"
		comment = "client_poll in the export: retired in the reference, which falls back to hold"
		im.notes = append(im.notes, fmt.Sprintf("changed: route %s: api_behavior client_poll is written as hold (the reference retired client_poll and falls back to hold)", r.ID))
	}
	im.noteApp(r, out)
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return keyRank(reaperOrder, a, b) })
	fields := make([]field, 0, len(keys))
	for _, k := range keys {
		f := field{key: k, value: valueNode(out[k], innerOrder(k))}
		if k == "api_behavior" {
			f.comment = comment
		}
		fields = append(fields, f)
	}
	return mapping(fields...)
}

func innerOrder(key string) []string {
	switch key {
	case "must_be_up_at":
		return rangeOrder
	case "monitoring_filters":
		return filterOrder
	}
	return nil
}

// noteApp records the Clever Cloud app of a route's reaper plugin: its app_id,
// else the one its target's default domain names, else none (the driver then
// looks it up by the route's domains among the apps' vhosts).
func (im *importer) noteApp(r otoRoute, cfg map[string]any) {
	id, _ := cfg["app_id"].(string)
	if id == "" {
		for _, t := range r.Backend.Targets {
			if guessed, ok := clevercloud.GuessAppID(t.Hostname); ok {
				id = guessed
				break
			}
		}
	}
	if id == "" {
		im.byHost = append(im.byHost, r.ID)
		return
	}
	if im.users == nil {
		im.users = map[string][]string{}
	}
	if _, seen := im.users[id]; !seen {
		im.apps = append(im.apps, id)
	}
	im.users[id] = append(im.users[id], r.ID)
}

// encode writes the whole configuration: a paas section for the Clever Cloud
// driver, whose credential comes from the environment, then the routes.
func (im *importer) encode() ([]byte, error) {
	cc := mapping(
		field{key: "token", value: "${CLEVER_CLOUD_API_TOKEN}"},
		field{key: "api_url", value: "${CLEVER_CLOUD_API_URL:-" + clevercloud.BridgeURL + "}"},
	)
	cc.Content[0].HeadComment = "An API token (clever tokens create reaper), from the environment: never write it here."
	paas := mapping(field{key: "driver", value: "clevercloud"}, field{key: "clevercloud", value: cc})
	routes := &yaml.Node{Kind: yaml.SequenceNode, Content: im.routes}
	doc := mapping(field{key: "paas", value: paas}, field{key: "routes", value: routes})
	doc.Content[0].HeadComment = im.appsComment()
	doc.HeadComment = "Imported from an Otoroshi export by reaper import-otoroshi.\nCheck it with: reaper check --config FILE (CLEVER_CLOUD_API_TOKEN set)"
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appsComment lists the Clever Cloud apps the routes manage.
func (im *importer) appsComment() string {
	var b strings.Builder
	if len(im.apps) == 0 && len(im.byHost) == 0 {
		return "No route has a reaper plugin: no app is put to sleep."
	}
	b.WriteString("The Clever Cloud apps of the routes:")
	for _, id := range im.apps {
		fmt.Fprintf(&b, "\n  %s (routes %s)", id, strings.Join(im.users[id], ", "))
	}
	if len(im.byHost) > 0 {
		fmt.Fprintf(&b, "\n  found at start by their domains among the apps' vhosts: routes %s", strings.Join(im.byHost, ", "))
	}
	return b.String()
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
