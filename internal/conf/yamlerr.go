package conf

import (
	"regexp"
	"strconv"
	"strings"
)

// The YAML library's syntax errors say "line N: problem", but N is not always
// the line: for its parser's errors it is the 0-based line of where the
// enclosing block or flow began (or of the problem), and a problem on the first
// line has no line at all. yamlError restates the error with the 1-based line,
// and says how to fix the one mistake a newcomer makes first: an unquoted
// *.example.com, which YAML reads as an alias.

// parserProblems are the problems the library's parser reports with a 0-based
// line (go.yaml.in/yaml/v3 parserc.go; its scanner's are 1-based already).
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

var (
	yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)
	// bareStar is an unquoted value starting with "*": after a key, a list's
	// "- ", "[" or ",".
	bareStar = regexp.MustCompile(`(?:^|[\s\[,{])(\*[^\s,\]}]*)`)
)

// yamlError is the message of a syntax error of the library on data.
func yamlError(err error, data []byte) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, problem := 0, msg
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		problem = m[2]
	}
	switch {
	case parserProblems[problem]:
		line++ // 0-based, and absent when 0
	case line == 0 && scannerProblem(problem):
		line = 1
	}
	if line == 0 {
		return msg
	}
	out := "line " + strconv.Itoa(line) + ": " + problem
	if star := starOn(data, line); star != "" {
		out += " (an unquoted " + star + " is read as a YAML alias: write it in quotes, " + strconv.Quote(star) + ")"
	}
	return out
}

// scannerProblem reports whether problem is one of the library's scanner's,
// which have no line when on the first one.
func scannerProblem(problem string) bool {
	for _, p := range []string{"found ", "did not find ", "could not find ", "mapping ", "block sequence ", "exceeded max depth"} {
		if strings.HasPrefix(problem, p) {
			return true
		}
	}
	return false
}

// starOn returns the first unquoted value starting with "*" on the 1-based
// line of data, or "".
func starOn(data []byte, line int) string {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	if m := bareStar.FindStringSubmatch(lines[line-1]); m != nil && len(strings.TrimRight(m[1], ":")) > 1 {
		return strings.TrimRight(m[1], ":") // a key's colon is not part of it
	}
	return ""
}
