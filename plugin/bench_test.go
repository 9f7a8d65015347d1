package plugin

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// BenchmarkGateway_vs_BareProxy compares one request through the gateway (a
// plugin-free route, then a route with the two kinds of transformers) with one
// through a bare httputil.ReverseProxy, on in-process loopback servers. Client and
// backend costs are the same in every case, so the differences of ns/op and
// allocs/op are the gateway's own.
func BenchmarkGateway_vs_BareProxy(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	ts := NewTransports()

	bare := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		// The same pool as the gateway's routes (default timeouts), so that
		// only the gateway's own work differs.
		Transport: ts.get(poolKey{DefaultRouteConfig().Backend.Timeouts, DefaultMaxConnections, backendKey{target.Scheme, target.Host}}),
	})
	defer bare.Close()

	r := buildRouter(b, `
routes:
  - {id: plain, frontend: {domains: [plain.test]}, backend: {targets: ["$B"]}}
  - id: plugins
    frontend: {domains: [plugins.test]}
    backend: {targets: ["$B"]}
    plugins: [{plugin: test_steps, config: {tag: t}}]
`, map[string]string{"B": backend.URL}, BuildOptions{Transports: ts})
	quiet := NewGateway(GatewayOptions{})
	quiet.Swap(r)
	logged := NewGateway(GatewayOptions{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Node: "n1"})
	logged.Swap(r)
	quietSrv := httptest.NewServer(quiet)
	defer quietSrv.Close()
	loggedSrv := httptest.NewServer(logged)
	defer loggedSrv.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	run := func(b *testing.B, base, host string) {
		req, _ := http.NewRequest("GET", base+"/hello", nil)
		req.Host = host
		b.ReportAllocs()
		for b.Loop() {
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Fatal(res.Status)
			}
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, bare.URL, "plain.test") })
	b.Run("gateway", func(b *testing.B) { run(b, quietSrv.URL, "plain.test") })
	b.Run("gateway_access_log", func(b *testing.B) { run(b, loggedSrv.URL, "plain.test") })
	b.Run("gateway_plugins", func(b *testing.B) { run(b, quietSrv.URL, "plugins.test") })
}
