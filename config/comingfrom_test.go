package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/reapergw/reaper/paas/docker"
	"github.com/reapergw/reaper/reaper"
)

// The table for people coming from Sablier or Traefik names only keys and
// labels that exist, and the README links to it.
func TestDocs_ComingFromSablierOrTraefikNamesKeysThatExist(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Coming from Sablier or Traefik\n")
	if !ok {
		t.Fatal("docs/configuration.md has no section \"Coming from Sablier or Traefik\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	for _, ty := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[reaper.Config](), reflect.TypeFor[docker.AppConfig]()} {
		yamlKeys(ty, keys, map[reflect.Type]bool{})
	}
	labels, err := os.ReadFile("../paas/docker/labels.go")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(cells[1], "---") || strings.Contains(cells[1], "Sablier or Traefik") {
			continue
		}
		rows++
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[2], -1) {
			name := strings.TrimSpace(m[1])
			switch {
			case strings.HasPrefix(name, "reaper."):
				if name != "reaper.*" && !strings.Contains(string(labels), `"`+name+`"`) {
					t.Errorf("the table names the label %s, which does not exist", name)
				}
			case strings.ContainsAny(name, "{ ") || isValue(name):
				// a value: {url, weight}, host/path, api_behavior: hold
				if k, _, ok := strings.Cut(name, ":"); ok && !keys[k] {
					t.Errorf("the table sets %s, which is not a key", k)
				}
			default:
				for _, part := range strings.Split(strings.ReplaceAll(name, "[]", ""), ".") {
					if !keys[part] {
						t.Errorf("the table names %s: %q is not a key", name, part)
					}
				}
			}
		}
	}
	if rows < 15 {
		t.Errorf("the table has %d rows; want every concept the issue lists (groups, strategies, session duration, labels…)", rows)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/configuration.md#coming-from-sablier-or-traefik)") {
		t.Error("the README does not link to the section")
	}
}

// isValue reports whether a backticked word of the table is a value, not a
// key: a plugin's name, host or host/path, a status code.
func isValue(s string) bool {
	switch s {
	case "headers", "ip_filter", "reaper", "host", "host/path", "routes[]":
		return true
	}
	return strings.Trim(s, "0123456789") == "" // a status code

}

// yamlKeys adds the yaml keys of ty and of every struct under it.
func yamlKeys(ty reflect.Type, keys map[string]bool, seen map[reflect.Type]bool) {
	for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
		ty = ty.Elem()
	}
	if ty.Kind() != reflect.Struct || seen[ty] {
		return
	}
	seen[ty] = true
	for f := range ty.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys[name] = true
		}
		yamlKeys(f.Type, keys, seen)
	}
}
