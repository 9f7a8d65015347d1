// Package conf decodes reaper's YAML configuration strictly into typed structs.
//
// It exists because users deserve errors that point at the field they got wrong:
// every problem is reported with its field path (routes[2].backend.targets[0]) and
// what was expected, all problems of a file at once, unknown keys included. YAML
// itself is parsed by go.yaml.in/yaml/v3; this package walks the parsed nodes.
//
// Scalars may reference the environment as ${VAR} or ${VAR:-default}; $${ stands
// for a literal ${. Durations accept Go syntax (90s, 15m) or a bare number of
// seconds. Values of type Secret are never quoted in an error.
package conf

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is one problem in a configuration, at a field path.
type Error struct {
	Path string // e.g. routes[2].backend.targets[0]; empty for the whole document
	Msg  string
}

func (e Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errors collects the problems of one configuration, in the order they were found.
// The zero value is ready to use.
type Errors struct {
	list []Error
}

// Add records a problem at path.
func (e *Errors) Add(path, format string, args ...any) {
	e.list = append(e.list, Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// AddError records err at path. An err that is itself an *Errors (or a List) is
// merged, its paths prefixed with path.
func (e *Errors) AddError(path string, err error) {
	switch x := err.(type) {
	case nil:
	case *Errors:
		for _, item := range x.list {
			e.list = append(e.list, Error{Path: joinPaths(path, item.Path), Msg: item.Msg})
		}
	case List:
		for _, item := range x {
			e.list = append(e.list, Error{Path: joinPaths(path, item.Path), Msg: item.Msg})
		}
	case Error:
		e.list = append(e.list, Error{Path: joinPaths(path, x.Path), Msg: x.Msg})
	default:
		e.list = append(e.list, Error{Path: path, Msg: err.Error()})
	}
}

// Len is the number of problems recorded.
func (e *Errors) Len() int { return len(e.list) }

// Err returns nil when nothing was recorded, else the problems as a List.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	return List(append([]Error(nil), e.list...))
}

// Error implements error so an *Errors can be returned by validators.
func (e *Errors) Error() string { return List(e.list).Error() }

// List is the error returned for a configuration with problems: one line each.
type List []Error

func (l List) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Key returns the path of field key under path.
func Key(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index returns the path of item i of the list at path.
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func joinPaths(prefix, rest string) string {
	switch {
	case prefix == "":
		return rest
	case rest == "":
		return prefix
	case strings.HasPrefix(rest, "["):
		return prefix + rest
	default:
		return prefix + "." + rest
	}
}
