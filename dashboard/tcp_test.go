package dashboard

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/reaper"
)

// withTCPRoutes gives app "blog" a TCP route with connections, as a node
// serving tcp_routes answers.
func withTCPRoutes(td *testDash) {
	for i := range td.api.apps {
		if td.api.apps[i].AppID == "blog" {
			td.api.apps[i].Routes = append(td.api.apps[i].Routes, "blog-db")
			td.api.apps[i].TCPRoutes = []reaper.TCPRouteView{{
				ID: "blog-db", AppID: "blog", Listen: "127.0.0.1:5432", Target: "127.0.0.1:15432", Mode: "request_response",
				IdleTimeout: "5m0s", Open: 2, Held: 1, Accepted: 41, Reaped: 7, Refused: 1, BytesIn: 12 << 20, BytesOut: 3 << 30,
			}}
		}
	}
}

// The app page of an app with a TCP route has a table of its routes; the apps
// table says its open and held connections; an app without one shows neither.
func TestAppPage_TCPRoutes(t *testing.T) {
	td := newTestDash(t)
	cookies, _ := td.signIn(t, "")
	if page := td.do("GET", "/apps/blog", nil, cookies).Body.String(); strings.Contains(page, "TCP routes") {
		t.Error("a TCP routes panel for an app that has none")
	}
	withTCPRoutes(td)
	page := td.do("GET", "/apps/blog", nil, cookies).Body.String()
	for _, want := range []string{
		"TCP routes", `data-tcp-route="blog-db"`, "<code>127.0.0.1:5432</code>", "<code>127.0.0.1:15432</code>",
		"request_response", "idle after 5m0s", `data-k="open">2<`, `data-k="held">1<`, ">41<", ">7<", "12.0 MiB", "3.00 GiB",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the app page does not say %q", want)
		}
	}
	index := td.do("GET", "/", nil, cookies).Body.String()
	if !strings.Contains(index, "blog, blog-www, blog-db") || !strings.Contains(index, "TCP: 2 open, 1 held") {
		t.Error("the apps table does not list the TCP route with its connections")
	}
	if strings.Count(index, "tcp-conns") != 1 {
		t.Error("apps without TCP routes show TCP connections")
	}
}

// In a browser the TCP routes' table shows the route with its counts. The
// screenshot is kept in $REAPER_SCREENSHOTS or the test's artifacts.
func TestAppPage_TCPRoutesInABrowser(t *testing.T) {
	b := chrometest.Start(t)
	td := newTestDash(t)
	withTCPRoutes(td)
	srv := httptest.NewServer(td.srv)
	t.Cleanup(srv.Close)
	pg := b.NewPage(t)
	if err := pg.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	if err := pg.Navigate(srv.URL + "/apps/blog"); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Eval(`document.getElementById("token").value = "` + testToken + `"; document.querySelector("form").requestSubmit()`); err != nil {
		t.Fatal(err)
	}
	pg.WaitFor(t, `document.querySelectorAll("table.tcp-routes tbody tr").length === 1`, 20*time.Second)
	var cells []string
	if err := pg.EvalInto(`Array.from(document.querySelectorAll("table.tcp-routes tbody tr > *"), c => c.innerText.trim())`, &cells); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cells, "|"); !strings.HasPrefix(got, "blog-db|127.0.0.1:5432|127.0.0.1:15432|request_response") || !strings.Contains(got, "|2|1|41|7|1|12.0 MiB|3.00 GiB") {
		t.Errorf("the row reads %q", got)
	}
	var overflows bool
	if err := pg.EvalInto(`(() => { const w = document.querySelector("#r-tcp .table-wrap"); return w.scrollWidth > w.clientWidth })()`, &overflows); err != nil {
		t.Fatal(err)
	}
	if overflows {
		t.Error("the TCP routes' table is wider than its card at 1280 px")
	}
	if _, err := pg.Eval(`document.getElementById("h-tcp").scrollIntoView()`); err != nil {
		t.Fatal(err)
	}
	pg.SaveScreenshot(t, "tcp-routes.png")
}
