package conf

import (
	"strings"
	"testing"
)

// A syntax error names the line of the file, counted from 1, whichever part
// of the YAML library found it; an unquoted *.example.com says to quote it.
func TestParse_SyntaxErrorsNameTheFilesLine(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"a key indented wrong (parser)", "node:\n  listen: 127.0.0.1:8080\n  data_dir: x\n bad: 1\n",
			"not valid YAML: line 4: did not find expected key"},
		{"a flow mapping never closed (parser)", "routes:\n  - id: a\n    frontend: {domains: [a.test]\n    backend: {}\n",
			"not valid YAML: line 3: did not find expected ',' or '}'"},
		{"a flow sequence never closed (parser)", "node:\n  id: [x\n  listen: y\n",
			"not valid YAML: line 2: did not find expected ',' or ']'"},
		{"a tab (scanner)", "node:\n\tlisten: 1\n",
			"not valid YAML: line 2: found character that cannot start any token"},
		{"on the first line", "a: b: c\n",
			"not valid YAML: line 1: mapping values are not allowed in this context"},
		{"an unquoted wildcard domain in a list", "routes:\n  - id: a\n    frontend:\n      domains:\n        - *.example.com\n",
			`not valid YAML: line 5: did not find expected alphabetic or numeric character (an unquoted *.example.com is read as a YAML alias: write it in quotes, "*.example.com")`},
		{"an unquoted wildcard domain in a flow list", "routes:\n  - id: a\n    frontend: {domains: [a.test, *.example.com]}\n",
			`(an unquoted *.example.com is read as a YAML alias: write it in quotes, "*.example.com")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse:\n got %v\nwant %s", err, c.want)
			}
		})
	}
}
