package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxImportBytes bounds the export read: a full Otoroshi export of a large
// installation is a few MiB.
const maxImportBytes = 64 << 20

// shapesUnderstood names the inputs import-otoroshi reads, for its errors.
const shapesUnderstood = `expected a route, a list of routes, an Otoroshi export with "routes", or kind/spec resources`

func importCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import-otoroshi", "import-otoroshi FILE", stdout, stderr)
	files, err := parseArgs(fs, args, stdout, 0, -1)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "reaper import-otoroshi: give one file: an Otoroshi export (JSON or YAML: a route, a list of routes, a full export, or kind/spec resources)")
		return exitCode(2)
	}
	data, err := readBounded(files[0], maxImportBytes)
	if err != nil {
		fmt.Fprintln(stderr, "reaper import-otoroshi:", err)
		return exitCode(1)
	}
	out, notes, err := importOtoroshi(data)
	if err != nil {
		fmt.Fprintf(stderr, "reaper import-otoroshi: %s: %v\n", files[0], err)
		return exitCode(1)
	}
	for _, s := range notes {
		fmt.Fprintln(stderr, s)
	}
	_, err = stdout.Write(out)
	return err
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, limit>>20)
	}
	return data, nil
}

// otoRoute is the part of an Otoroshi route that reaper reads.
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

// importOtoroshi turns an export into a whole reaper configuration (YAML). It
// returns notes for the operator, one line each: what was not carried over, and
// what was changed on the way.
func importOtoroshi(data []byte) ([]byte, []string, error) {
	routes, notes, err := parseOtoroshi(data)
	if err != nil {
		return nil, nil, err
	}
	if len(routes) == 0 {
		return nil, nil, errors.New("no route found")
	}
	im := importer{}
	im.notes = notes
	for i, r := range routes {
		if r.ID == "" {
			return nil, nil, fmt.Errorf("route %d has no id", i)
		}
		im.route(r)
	}
	out, err := im.encode()
	if err != nil {
		return nil, nil, err
	}
	return out, im.notes, nil
}

// parseOtoroshi reads the shapes import-otoroshi understands: a route, a list of
// routes, a full Otoroshi export (its "routes"), or kind/spec resources (one, a
// list, or YAML documents). JSON is read as JSON; anything else as YAML, with one
// resource or list per document.
func parseOtoroshi(data []byte) ([]otoRoute, []string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("the file is empty: " + shapesUnderstood)
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		var v any
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return nil, nil, fmt.Errorf("not valid JSON: %w", err)
		}
		return routesOf(v)
	}
	var all []otoRoute
	var notes []string
	dec := yaml.NewDecoder(bytes.NewReader(trimmed))
	for doc := 0; ; doc++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("neither JSON nor YAML (document %d): %w", doc+1, err)
		}
		if v == nil {
			continue
		}
		if m, ok := v.(map[string]any); ok && m["kind"] != nil && m["spec"] != nil {
			// A stream of resources: one of another kind is passed over, as in a list.
			if _, note, _ := resource(m); note != "" {
				notes = append(notes, fmt.Sprintf("not imported: document %d: %s (reaper imports routes only)", doc+1, note))
				continue
			}
		}
		routes, n, err := routesOf(v)
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", doc+1, err)
		}
		all, notes = append(all, routes...), append(notes, n...)
	}
	return all, notes, nil
}

// routesOf finds the routes in a decoded document, by its shape.
func routesOf(v any) ([]otoRoute, []string, error) {
	switch v := v.(type) {
	case []any:
		return routeList(v)
	case map[string]any:
		return routesOfObject(v)
	default:
		return nil, nil, fmt.Errorf("%s: %s", describe(v), shapesUnderstood)
	}
}

// routesOfObject reads an object: a kind/spec resource, a full export or one route.
func routesOfObject(m map[string]any) ([]otoRoute, []string, error) {
	_, hasKind := m["kind"]
	_, hasSpec := m["spec"]
	switch {
	case hasKind && hasSpec:
		r, note, err := resource(m)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			return nil, nil, fmt.Errorf("%s: %s", note, shapesUnderstood)
		}
		return []otoRoute{r}, nil, nil
	case m["routes"] != nil:
		list, ok := m["routes"].([]any)
		if !ok {
			return nil, nil, fmt.Errorf("an export whose \"routes\" is %s, not a list", describe(m["routes"]))
		}
		routes, notes, err := routeList(list)
		if err != nil {
			return nil, nil, fmt.Errorf("routes%w", err)
		}
		return routes, append(notes, exportLeftOut(m)...), nil
	case isRoute(m):
		r, err := decodeRoute(m)
		if err != nil {
			return nil, nil, err
		}
		return []otoRoute{r}, nil, nil
	}
	return nil, nil, fmt.Errorf("%s: %s", describe(m), shapesUnderstood)
}

// routeList reads a list whose items are routes or kind/spec resources; its
// errors begin with the item's index ("[2]: …").
func routeList(list []any) ([]otoRoute, []string, error) {
	var routes []otoRoute
	var notes []string
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("[%d]: %s: %s", i, describe(item), shapesUnderstood)
		}
		_, hasKind := m["kind"]
		_, hasSpec := m["spec"]
		if hasKind && hasSpec {
			r, note, err := resource(m)
			switch {
			case err != nil:
				return nil, nil, fmt.Errorf("[%d]: %w", i, err)
			case note != "":
				notes = append(notes, fmt.Sprintf("not imported: [%d]: %s (reaper imports routes only)", i, note))
			default:
				routes = append(routes, r)
			}
			continue
		}
		if !isRoute(m) {
			return nil, nil, fmt.Errorf("[%d]: %s: expected a route or a kind/spec resource", i, describe(m))
		}
		r, err := decodeRoute(m)
		if err != nil {
			return nil, nil, fmt.Errorf("[%d]: %w", i, err)
		}
		routes = append(routes, r)
	}
	return routes, notes, nil
}

// resource reads a kind/spec resource. A resource of another kind than Route
// comes back as a note naming it, with no route.
func resource(m map[string]any) (otoRoute, string, error) {
	kind, _ := m["kind"].(string)
	name := ""
	if md, ok := m["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	if !strings.EqualFold(kind, "Route") {
		return otoRoute{}, fmt.Sprintf("a resource of kind %q (%s)", kind, cmpOr(name, "no name")), nil
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return otoRoute{}, "", fmt.Errorf("a Route resource whose spec is %s, not an object", describe(m["spec"]))
	}
	r, err := decodeRoute(spec)
	if err != nil {
		return otoRoute{}, "", err
	}
	if r.ID == "" {
		r.ID = name // the resource's name stands for a spec without id
	}
	return r, "", nil
}

// isRoute reports whether an object looks like a route: it has a frontend or a
// backend (an id alone could be any entity).
func isRoute(m map[string]any) bool {
	_, fe := m["frontend"]
	_, be := m["backend"]
	return fe || be
}

// decodeRoute reads one route out of its decoded form.
func decodeRoute(m map[string]any) (otoRoute, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return otoRoute{}, err
	}
	var r otoRoute
	if err := json.Unmarshal(raw, &r); err != nil {
		id, _ := m["id"].(string)
		return otoRoute{}, fmt.Errorf("route %s is not an Otoroshi route: %w", cmpOr(id, "without id"), err)
	}
	return r, nil
}

// exportLeftOut says what of a full export is not imported: its legacy service
// descriptors, which are routes too.
func exportLeftOut(m map[string]any) []string {
	if sd, ok := m["serviceDescriptors"].([]any); ok && len(sd) > 0 {
		noun := "service descriptors"
		if len(sd) == 1 {
			noun = "service descriptor"
		}
		return []string{fmt.Sprintf("not imported: %d %s (legacy services: convert them to routes in Otoroshi, then export again)", len(sd), noun)}
	}
	return nil
}

// describe names what was found where something else was expected.
func describe(v any) string {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			return "an empty object"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > 12 {
			keys = append(keys[:12], "…")
		}
		return "an object with keys " + strings.Join(keys, ", ")
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	default:
		return "a number"
	}
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
