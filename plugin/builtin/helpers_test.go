package builtin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

// decodeRoutes decodes {routes: [...]} and validates it as the loader does,
// returning the routes and every error line.
func decodeRoutes(t *testing.T, src string) ([]plugin.RouteConfig, []string) {
	t.Helper()
	n, err := conf.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Routes []plugin.RouteConfig `yaml:"routes"`
	}
	var errs conf.Errors
	var d conf.Decoder
	d.Decode(n, &file, "", &errs)
	plugin.ValidateRoutes(file.Routes, "routes", &errs)
	if err := errs.Err(); err != nil {
		return file.Routes, strings.Split(err.Error(), "\n")
	}
	return file.Routes, nil
}

// routeWith returns a one-route document whose only plugin is kind with config.
func routeWith(backend, kind, config string) string {
	return `
routes:
  - id: r
    frontend: {domains: [r.test]}
    backend: {targets: ["` + backend + `"]}
    plugins: [{plugin: ` + kind + `, config: ` + config + `}]
`
}

// serve builds the routes and returns a gateway server for them.
func serve(t *testing.T, src string) *httptest.Server {
	t.Helper()
	routes, errs := decodeRoutes(t, src)
	if errs != nil {
		t.Fatal(errs)
	}
	r, err := plugin.BuildRouter(context.Background(), routes, plugin.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	g := plugin.NewGateway(plugin.GatewayOptions{})
	g.Swap(r)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, header http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Host = "r.test"
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}
