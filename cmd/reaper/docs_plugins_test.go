package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reapergw/reaper/plugin"
)

// docs/configuration.md names the plugins that exist, and only them: the
// plugin key's row lists every registered one, and the advice on what to put
// before reaper names registered plugins only (it once named an
// "authentication" plugin that does not exist).
func TestDocs_ConfigurationNamesThePluginsThatExist(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### `routes[].plugins[]`")
	section, _, _ = strings.Cut(section, "\n### ")
	row := regexp.MustCompile("(?m)^\\| `plugin` \\| required \\| (.*) \\|$").FindStringSubmatch(section)
	if row == nil {
		t.Fatal("no row for the plugin key in routes[].plugins[]")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[1], -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	if ids := plugin.IDs(); !slices.Equal(listed, ids) {
		t.Errorf("the plugin key's row lists %v; the registered plugins are %v", listed, ids)
	}
	put := regexp.MustCompile("Put (.*?) before `reaper`").FindStringSubmatch(strings.Join(strings.Fields(section), " "))
	if put == nil {
		t.Fatal("no advice on what to put before reaper")
	}
	for _, name := range regexp.MustCompile(`,\s*|\s+and\s+|\s+or\s+`).Split(put[1], -1) {
		if id := strings.Trim(name, "`"); name != "`"+id+"`" || !slices.Contains(plugin.IDs(), id) {
			t.Errorf("the docs say to put %q before reaper: not a plugin that exists (%v)", name, plugin.IDs())
		}
	}
}
