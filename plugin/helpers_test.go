package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/testwait"
)

// Test plugins, registered once for every test of the package.
func init() {
	Register(Info{ID: "test_steps", New: func() Plugin { return &stepsPlugin{} }})
	Register(Info{ID: "test_dial", New: func() Plugin { return &dialPlugin{} }})
	Register(Info{ID: "test_required", New: func() Plugin { return &requiredPlugin{} }})
}

// callLog records plugin calls, shared through Services["calls"].
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *callLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// stepsPlugin implements every step; it records each call as "tag:step" and can
// be told to answer, fail or panic at a step.
type stepsPlugin struct {
	Tag    string `yaml:"tag"`
	Answer string `yaml:"answer"` // step at which to answer 403
	Fail   string `yaml:"fail"`   // step at which to return an error
	Panic  string `yaml:"panic"`  // step at which to panic
	// OnDone names a Services entry holding a chan string; the plugin sends its
	// tag on it from an OnDone function.
	OnDone string `yaml:"on_done"`
	// FailProvision makes Provision fail: "plain" with an error, "conf" with
	// configuration errors carrying full paths, "panic" with a panic.
	FailProvision string `yaml:"fail_provision"`

	log     *callLog
	done    chan string
	cleaned *callLog
}

func (p *stepsPlugin) Provision(ctx ProvisionContext) error {
	switch p.FailProvision {
	case "plain":
		return errors.New("cannot provision " + p.Tag)
	case "conf":
		var errs conf.Errors
		errs.Add(conf.Key(ctx.Path, "tag"), "%q is taken", p.Tag)
		errs.Add(ctx.Path, "and something else")
		return &errs
	case "panic":
		panic("provision " + p.Tag)
	}
	p.log, _ = ctx.Services["calls"].(*callLog)
	p.cleaned, _ = ctx.Services["cleaned"].(*callLog)
	if p.OnDone != "" {
		p.done = ctx.Services[p.OnDone].(chan string)
	}
	if p.log == nil {
		p.log = &callLog{}
	}
	return nil
}

func (p *stepsPlugin) Cleanup() error {
	if p.cleaned != nil {
		p.cleaned.add(p.Tag)
	}
	return nil
}

func (p *stepsPlugin) step(ex *Exchange, step string) (*Answer, error) {
	p.log.add(p.Tag + ":" + step)
	switch step {
	case p.Panic:
		panic("boom in " + p.Tag)
	case p.Fail:
		return nil, errors.New("failure in " + p.Tag)
	case p.Answer:
		return JSONAnswer(http.StatusForbidden, map[string]string{"denied_by": p.Tag, "request_id": ex.ID}), nil
	}
	return nil, nil
}

func (p *stepsPlugin) PreRoute(ex *Exchange) (*Answer, error) {
	ex.SetValue(p, "seen in pre-route")
	if p.done != nil {
		ch, tag := p.done, p.Tag
		ex.OnDone(func() { ch <- tag })
	}
	return p.step(ex, "pre")
}

func (p *stepsPlugin) ValidateAccess(ex *Exchange) (*Answer, error) { return p.step(ex, "access") }

func (p *stepsPlugin) TransformRequest(ex *Exchange, out *http.Request) error {
	if ex.Value(p) != "seen in pre-route" {
		return errors.New("the exchange lost the value set in pre-route")
	}
	out.Header.Add("X-Chain", p.Tag)
	_, err := p.step(ex, "request")
	return err
}

func (p *stepsPlugin) TransformResponse(ex *Exchange, res *http.Response) error {
	res.Header.Add("X-Chain-Response", p.Tag)
	_, err := p.step(ex, "response")
	return err
}

// dialPlugin calls the func found in Services["dial"] on a dial failure.
type dialPlugin struct {
	f func(ex *Exchange, err error) (DialAction, *Answer)
}

func (p *dialPlugin) Provision(ctx ProvisionContext) error {
	p.f = ctx.Services["dial"].(func(*Exchange, error) (DialAction, *Answer))
	return nil
}

func (p *dialPlugin) HandleDialFailure(ex *Exchange, err error) (DialAction, *Answer) {
	return p.f(ex, err)
}

// requiredPlugin has a required key, to check that a plugin without config is
// still validated.
type requiredPlugin struct {
	Name string `yaml:"name"`
}

func (p *requiredPlugin) Validate(path string, errs *conf.Errors) {
	if p.Name == "" {
		errs.Add(conf.Key(path, "name"), "is required")
	}
}

// parseRoutes decodes a YAML document {routes: [...]} as the binary's loader does.
func parseRoutes(t testing.TB, src string, env map[string]string) ([]RouteConfig, error) {
	t.Helper()
	n, err := conf.Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var file struct {
		Routes []RouteConfig `yaml:"routes"`
	}
	var errs conf.Errors
	d := conf.Decoder{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	d.Decode(n, &file, "", &errs)
	return file.Routes, errs.Err()
}

// mustRouter builds a router from YAML; $NAME in src is replaced by vars[NAME].
func mustRouter(t testing.TB, src string, vars map[string]string, services map[string]any) *Router {
	t.Helper()
	return buildRouter(t, src, vars, BuildOptions{Services: services})
}

// buildRouter is mustRouter with every build option.
func buildRouter(t testing.TB, src string, vars map[string]string, opts BuildOptions) *Router {
	t.Helper()
	for k, v := range vars {
		src = strings.ReplaceAll(src, "$"+k, v)
	}
	routes, err := parseRoutes(t, src, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	r, err := BuildRouter(context.Background(), routes, opts)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// logSink is a slog.Handler that keeps records in memory.
type logSink struct {
	mu      sync.Mutex
	records []map[string]any
	level   slog.Level
}

func (s *logSink) Enabled(_ context.Context, l slog.Level) bool { return l >= s.level }

func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, m)
	return nil
}

func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler { return &attrsSink{s, as} }
func (s *logSink) WithGroup(string) slog.Handler         { return s }

// attrsSink carries the attributes of logger.With into the shared sink.
type attrsSink struct {
	s  *logSink
	as []slog.Attr
}

func (a *attrsSink) Enabled(ctx context.Context, l slog.Level) bool { return a.s.Enabled(ctx, l) }
func (a *attrsSink) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(a.as...)
	return a.s.Handle(ctx, r)
}
func (a *attrsSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrsSink{a.s, append(append([]slog.Attr(nil), a.as...), as...)}
}
func (a *attrsSink) WithGroup(string) slog.Handler { return a }

// find returns the records with message msg.
func (s *logSink) find(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, r := range s.records {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// testGateway is a gateway on a real listener with a log sink.
type testGateway struct {
	*Gateway
	srv  *httptest.Server
	logs *logSink
}

func newTestGateway(t testing.TB, r *Router, trusted ...string) *testGateway {
	t.Helper()
	logs := &logSink{}
	opts := GatewayOptions{Logger: slog.New(logs), Node: "n1"}
	for _, s := range trusted {
		p, err := ParseAddrOrPrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		opts.TrustedProxies = append(opts.TrustedProxies, p)
	}
	g := NewGateway(opts)
	g.Swap(r)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &testGateway{Gateway: g, srv: srv, logs: logs}
}

// do sends a request to the gateway with the given Host.
func (tg *testGateway) do(t testing.TB, method, host, path string, header http.Header, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, tg.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := tg.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, host, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return res, string(b)
}

// accessLine waits for the access line of request id: the gateway's id, or the
// X-Request-Id the client sent (its client_request_id).
func (tg *testGateway) accessLine(t testing.TB, id string) map[string]any {
	t.Helper()
	var line map[string]any
	testwait.For(t, 5*time.Second, "access line of "+id, func() bool {
		for _, r := range tg.logs.find("access") {
			if r["request_id"] == id || r["client_request_id"] == id {
				line = r
				return true
			}
		}
		return false
	})
	return line
}

// echoBackend answers with the request it got, as text lines.
func echoBackend(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "method=%s\nhost=%s\nuri=%s\nbody=%s\n", r.Method, r.Host, r.RequestURI, body)
		for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Request-Id", "X-Chain",
			"Keep-Alive", "Proxy-Connection", "Te", "Upgrade", "Http2-Settings", "X-Secret", "X-Added", "Connection", "Forwarded", "X-Real-Ip"} {
			if vs, ok := r.Header[k]; ok {
				fmt.Fprintf(w, "%s=%s\n", k, strings.Join(vs, "|"))
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// field returns the value of "key=" in an echo body, and whether it was present.
func field(body, key string) (string, bool) {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v, true
		}
	}
	return "", false
}
