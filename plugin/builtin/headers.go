package builtin

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

// HeadersID is the id of the headers plugin.
const HeadersID = "headers"

// Headers is the headers plugin: it changes the headers of the request sent to
// the backend and of the response sent to the client.
//
//	plugins:
//	  - plugin: headers
//	    config:
//	      request:  {add: {X-From: reaper}, set: {X-Env: prod}, remove: [Cookie]}
//	      response: {set: {Strict-Transport-Security: max-age=63072000}, remove: [Server]}
//
// Operations run in the order remove, set, add. In request.set, Host sets the
// Host header sent to the backend (by default the target's host).
type Headers struct {
	Request  HeaderOps `yaml:"request"`
	Response HeaderOps `yaml:"response"`
}

// HeaderOps are the changes made to one set of headers.
type HeaderOps struct {
	// Add appends a value to a header (keeping the values already there).
	Add map[string]string `yaml:"add"`
	// Set replaces a header's values with one value.
	Set map[string]string `yaml:"set"`
	// Remove deletes headers.
	Remove []string `yaml:"remove"`
}

var (
	_ plugin.RequestTransformer  = (*Headers)(nil)
	_ plugin.ResponseTransformer = (*Headers)(nil)
	_ conf.Validator             = (*HeaderOps)(nil)
	_ conf.Validator             = (*Headers)(nil)
)

// Validate refuses Host in request.add and request.remove: the Host sent to the
// backend is one value, changed with request.set only.
func (h *Headers) Validate(path string, errs *conf.Errors) {
	rp := conf.Key(path, "request")
	if k, ok := findFold(h.Request.Add, "Host"); ok {
		errs.Add(conf.Key(conf.Key(rp, "add"), k), "Host can only be changed with request.set")
	}
	for i, name := range h.Request.Remove {
		if strings.EqualFold(name, "Host") {
			errs.Add(conf.Index(conf.Key(rp, "remove"), i), "Host can only be changed with request.set")
		}
	}
}

// Validate checks header names (HTTP tokens) and values (no CR, LF or other
// control character, which would split or corrupt a header).
func (o *HeaderOps) Validate(path string, errs *conf.Errors) {
	checkMap := func(field string, m map[string]string) {
		for _, name := range sortedKeys(m) {
			p := conf.Key(conf.Key(path, field), name)
			if !httpguts.ValidHeaderFieldName(name) {
				errs.Add(p, "%s is not a valid header name", strconv.Quote(name))
			} else if !validValue(m[name]) {
				errs.Add(p, "the value must not contain CR, LF or other control characters")
			}
		}
	}
	checkMap("add", o.Add)
	checkMap("set", o.Set)
	for i, name := range o.Remove {
		if !httpguts.ValidHeaderFieldName(name) {
			errs.Add(conf.Index(conf.Key(path, "remove"), i), "%s is not a valid header name", strconv.Quote(name))
		}
	}
}

// TransformRequest applies the request operations to the outbound request.
func (h *Headers) TransformRequest(_ *plugin.Exchange, out *http.Request) error {
	if host, ok := lookupFold(h.Request.Set, "Host"); ok {
		out.Host = host
	}
	h.Request.apply(out.Header)
	return nil
}

// TransformResponse applies the response operations to the backend's response.
func (h *Headers) TransformResponse(_ *plugin.Exchange, res *http.Response) error {
	h.Response.apply(res.Header)
	return nil
}

func (o *HeaderOps) apply(h http.Header) {
	for _, name := range o.Remove {
		h.Del(name)
	}
	for name, v := range o.Set {
		if !strings.EqualFold(name, "Host") {
			h.Set(name, v)
		}
	}
	for name, v := range o.Add {
		h.Add(name, v)
	}
}

func lookupFold(m map[string]string, key string) (string, bool) {
	if k, ok := findFold(m, key); ok {
		return m[k], true
	}
	return "", false
}

// findFold returns the key of m equal to key regardless of case.
func findFold(m map[string]string, key string) (string, bool) {
	for k := range m {
		if strings.EqualFold(k, key) {
			return k, true
		}
	}
	return "", false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validValue reports whether s may be a header value: no control characters but
// horizontal tab.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
