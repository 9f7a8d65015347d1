package main

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// docKeys reads the first column of the first table after the line that starts
// with heading, in a docs page: the keys, in their documented order.
func docKeys(t *testing.T, page, heading string) ([]string, map[string]string) {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	rows := map[string]string{}
	found, inTable := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !found:
			found = strings.HasPrefix(line, heading)
		case strings.HasPrefix(line, "|"):
			inTable = true
			cells := strings.Split(line, "|")
			if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
				continue // the header and its rule
			}
			for _, k := range strings.Split(cells[1], ",") {
				k = strings.Trim(strings.TrimSpace(k), "`")
				keys = append(keys, k)
				rows[k] = line
			}
		case inTable:
			return keys, rows
		}
	}
	if len(keys) == 0 {
		t.Fatalf("%s: no table after %q", page, heading)
	}
	return keys, rows
}

// under returns the keys below prefix (frontend.domains → domains), in order.
func under(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			out = append(out, strings.SplitN(rest, ".", 2)[0])
		}
	}
	return slices.Compact(out)
}

// firstSegments returns the first segment of each key, in order.
func firstSegments(keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, strings.SplitN(k, ".", 2)[0])
	}
	return slices.Compact(out)
}

// itemKeys reads the keys of the items in a row's first "[{…}]" code span
// (`[{days: [mon, tue], start: "08:00", end: "19:00"}]` → days, start, end).
func itemKeys(t *testing.T, row string) []string {
	t.Helper()
	span := regexp.MustCompile("`\\[\\{([^`]*)\\}\\]`").FindStringSubmatch(row)
	if span == nil {
		t.Fatalf("no [{…}] in %q", row)
	}
	inner := regexp.MustCompile(`\[[^\]]*\]|"[^"]*"`).ReplaceAllString(span[1], "x")
	var keys []string
	for _, part := range strings.Split(inner, ",") {
		keys = append(keys, strings.TrimSpace(strings.SplitN(part, ":", 2)[0]))
	}
	return keys
}

// documentedOrder is the order of the keys of each mapping that import-otoroshi
// writes, read from docs/configuration.md and docs/clevercloud.md.
func documentedOrder(t *testing.T) map[string][]string {
	conf := "../../docs/configuration.md"
	var sections []string
	f, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)^## `([a-z_]+)(?:\\[\\])?`").FindAllStringSubmatch(string(f), -1) {
		sections = append(sections, m[1])
	}
	paas, _ := docKeys(t, conf, "## `paas`")
	cc, _ := docKeys(t, "../../docs/clevercloud.md", "## Settings: `paas.clevercloud`")
	routes, _ := docKeys(t, conf, "## `routes[]`")
	plugins, _ := docKeys(t, conf, "### `routes[].plugins[]`")
	rp, rows := docKeys(t, conf, "### The `reaper` plugin")
	cfg := "routes[].plugins[].config"
	return map[string][]string{
		"":                            sections,
		"paas":                        paas,
		"paas.clevercloud":            cc,
		"routes[]":                    firstSegments(routes),
		"routes[].frontend":           under(routes, "frontend"),
		"routes[].backend":            under(routes, "backend"),
		"routes[].plugins[]":          plugins,
		cfg:                           rp,
		cfg + ".must_be_up_at[]":      itemKeys(t, rows["must_be_up_at"]),
		cfg + ".monitoring_filters[]": itemKeys(t, rows["monitoring_filters"]),
	}
}

// checkOrder walks the node: every mapping with a documented order has only
// documented keys, in that order.
func checkOrder(t *testing.T, n *yaml.Node, path string, order map[string][]string) {
	t.Helper()
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			checkOrder(t, c, path, order)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			checkOrder(t, c, path+"[]", order)
		}
	case yaml.MappingNode:
		want, documented := order[path]
		last := -1
		for i := 0; i < len(n.Content); i += 2 {
			key := n.Content[i].Value
			sub := key
			if path != "" {
				sub = path + "." + key
			}
			if documented {
				at := slices.Index(want, key)
				switch {
				case at < 0:
					t.Errorf("%s: key %s is not in the documented keys %v", path, key, want)
				case at < last:
					t.Errorf("%s: key %s comes after %s, against the documented order %v", path, key, want[last], want)
				}
				last = max(last, at)
			}
			checkOrder(t, n.Content[i+1], sub, order)
		}
	}
}

// TestImportOtoroshi_DocumentedOrder: the keys of the configuration written come
// in the order the docs give them.
func TestImportOtoroshi_DocumentedOrder(t *testing.T) {
	order := documentedOrder(t)
	if got := order["routes[].plugins[].config.must_be_up_at[]"]; !slices.Equal(got, []string{"days", "start", "end"}) {
		t.Fatalf("the docs' must_be_up_at keys read as %v", got)
	}
	for _, file := range []string{"otoroshi-routes.json", "otoroshi-export.json"} {
		out, stderr, err := importFile(t, "testdata/"+file)
		if err != nil {
			t.Fatalf("%s: %v\n%s", file, err, stderr)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		checkOrder(t, &doc, "", order)
	}
}
