package plugin

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The messages of the answers the gateway gives itself. Clients and tests rely on
// them: change them only with the documentation.
const (
	msgNoRoute     = "no route for this host and path"
	msgUnreachable = "the backend could not be reached"
	msgTimeout     = "the backend did not answer in time"
	msgBadResponse = "the backend closed the connection or sent an invalid response"
	msgInternal    = "the gateway failed to handle the request"
)

// msgPluginFailed is the client-facing message when a plugin fails; the error
// itself goes to the log only.
func msgPluginFailed(kind string) string {
	return "plugin " + strconv.Quote(kind) + " failed"
}

// errorBody is the JSON body of the gateway's own error answers.
type errorBody struct {
	Error     string `json:"error"`
	RequestID string `json:"request_id"`
}

var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Status}} {{.StatusText}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}code{font-size:.9em}</style>
</head>
<body>
<h1>{{.StatusText}}</h1>
<p>{{.Message}}.</p>
<p><small>Request id: <code>{{.RequestID}}</code></small></p>
</body>
</html>
`))

// writeError answers with the gateway's error body for status: an HTML page when
// the client's Accept prefers text/html to JSON, JSON otherwise.
func (st *state) writeError(status int, msg string) {
	var body []byte
	ctype := "application/json"
	if prefersHTML(st.ex.Request.Header.Get("Accept")) {
		var buf bytes.Buffer
		// Rendered into a buffer so that a failed render cannot leave half a page.
		err := errorPage.Execute(&buf, map[string]any{
			"Status": status, "StatusText": http.StatusText(status), "Message": msg, "RequestID": st.ex.ID,
		})
		if err == nil {
			body, ctype = buf.Bytes(), "text/html; charset=utf-8"
		}
	}
	if body == nil {
		body, _ = json.Marshal(errorBody{Error: msg, RequestID: st.ex.ID})
		body = append(body, '\n')
	}
	h := st.rec.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	st.writeBody(status, body)
}

// writeAnswer writes a plugin's Answer. A status a response cannot have is a bug
// in the plugin: the client gets a 500 and the log says why.
func (st *state) writeAnswer(inst *instance, a *Answer) {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 599 {
		st.logger().Error("plugin answered with an invalid status", "plugin", inst.kind, "status", a.Status)
		st.writeError(http.StatusInternalServerError, msgPluginFailed(inst.kind))
		return
	}
	h := st.rec.Header()
	for k, vs := range a.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	if a.Stream != nil {
		st.writeStream(status, a.Stream)
		return
	}
	st.writeBody(status, a.Body)
}

// writeStream writes the header of a streamed answer, flushes it, and lets
// stream write the body (see Answer.Stream).
func (st *state) writeStream(status int, stream func(io.Writer, func() error)) {
	if st.upstream == "" {
		st.upstream = upstreamGateway
	}
	st.rec.Header().Del("Content-Length")
	st.rec.WriteHeader(status)
	if err := st.rec.FlushError(); err != nil || st.ex.Request.Method == http.MethodHead {
		return
	}
	stream(&st.rec, st.rec.FlushError)
}

func (st *state) writeBody(status int, body []byte) {
	if st.upstream == "" {
		st.upstream = upstreamGateway // no target was tried
	}
	if status == http.StatusNoContent || status == http.StatusNotModified {
		st.rec.WriteHeader(status) // these statuses have no body
		return
	}
	st.rec.Header().Set("Content-Length", strconv.Itoa(len(body)))
	st.rec.WriteHeader(status)
	if st.ex.Request.Method != http.MethodHead {
		st.rec.Write(body) //nolint:errcheck // a client gone is not our error
	}
}

// upstreamGateway is the access log's upstream when the gateway answered itself
// without trying a target.
const upstreamGateway = "gateway"

// prefersHTML reports whether an Accept header ranks text/html above
// application/json. Equal ranks (no header, */*) prefer JSON: scripts and curl
// get JSON, browsers (text/html first) get a page.
func prefersHTML(accept string) bool {
	if accept == "" {
		return false
	}
	htmlQ, htmlSpec := -1.0, -1
	jsonQ, jsonSpec := -1.0, -1
	for r := range strings.SplitSeq(accept, ",") {
		media, params, _ := strings.Cut(r, ";")
		media = strings.ToLower(strings.TrimSpace(media))
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
		// The most specific range that covers a type gives its quality.
		if spec := specificity(media, "text", "html"); spec > htmlSpec {
			htmlQ, htmlSpec = q, spec
		}
		if spec := specificity(media, "application", "json"); spec > jsonSpec {
			jsonQ, jsonSpec = q, spec
		}
	}
	return htmlQ > 0 && htmlQ > jsonQ
}

// specificity says how precisely media covers typ/sub: 2 exact, 1 typ/*, 0 */*,
// -1 not at all.
func specificity(media, typ, sub string) int {
	switch media {
	case typ + "/" + sub:
		return 2
	case typ + "/*":
		return 1
	case "*/*":
		return 0
	}
	return -1
}
