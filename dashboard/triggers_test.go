package dashboard

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/trigger"
)

// testTriggers are three triggers: one that fired, one failing, one a
// producer's.
func testTriggers() []trigger.View {
	now := time.Now()
	check, fire, failed := now.Add(-4*time.Second), now.Add(-3*time.Minute), now.Add(-2*time.Second)
	return []trigger.View{
		{ID: "redis-queue", Kind: trigger.KindRedisList, Wake: "shop", EverySeconds: 5, Running: true, LastCheck: &check, LastFire: &fire, Fires: 2},
		{ID: "pending-invoices", Kind: trigger.KindSQL, Wake: "crm", EverySeconds: 30, Running: true, LastCheck: &failed,
			Failing: true, Failures: 4, LastError: "postgres connect: dial tcp 10.0.0.5:5432: connect: connection refused", LastErrorAt: &failed},
		{ID: "orders", Kind: trigger.KindEndpoint, Wake: "blog", Running: true},
		{ID: "jobs", Kind: trigger.KindPostgresNotify, Wake: "shop", Running: true, LastCheck: &check, Nodes: []trigger.NodeView{
			{Node: "n1", Listening: true, LastCheck: &check}, {Node: "n2", Listening: true, LastCheck: &check},
			{Node: "n3", Listening: true, Failing: true, LastError: "postgres connect: connection refused"}}},
	}
}

// The apps page lists the triggers: app, last check, last fire and the error
// of the failing one; without triggers there is no panel.
func TestIndex_TriggersPanel(t *testing.T) {
	td := newTestDash(t)
	cookies, _ := td.signIn(t, "")
	if page := td.do("GET", "/", nil, cookies).Body.String(); strings.Contains(page, "Wake triggers") {
		t.Error("a panel of triggers on a node that has none")
	}
	td.api.triggers = testTriggers()
	page := td.do("GET", "/", nil, cookies).Body.String()
	for _, want := range []string{
		"Wake triggers", `data-trigger="redis-queue"`, "redis list, every 5 s", `href="/apps/shop"`,
		"SQL query, every 30 s", `<span class="err-t">postgres connect: dial tcp 10.0.0.5:5432: connect: connection refused</span>`,
		"4 looks failed in a row", "producer endpoint", "3 min ago",
		"Postgres NOTIFY", "listening on n1, n2", `<span class="err-t">dialling again on n3</span>`, // each node's LISTEN
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the apps page does not say %q", want)
		}
	}
}

// In a browser the panel shows the four triggers, the failing one's error in
// the error colour, and the nodes that keep the NOTIFY trigger's LISTEN. The screenshot is kept in $REAPER_SCREENSHOTS or the
// test's artifacts.
func TestIndex_TriggersPanelInABrowser(t *testing.T) {
	b := chrometest.Start(t)
	td := newTestDash(t)
	td.api.triggers = testTriggers()
	srv := httptest.NewServer(td.srv)
	t.Cleanup(srv.Close)
	pg := b.NewPage(t)
	if err := pg.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 1400, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	if err := pg.Navigate(srv.URL + "/"); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Eval(`document.getElementById("token").value = "` + testToken + `"; document.querySelector("form").requestSubmit()`); err != nil {
		t.Fatal(err)
	}
	pg.WaitFor(t, `document.querySelectorAll("table.triggers tbody tr").length === 4`, 20*time.Second)
	var rows []string
	if err := pg.EvalInto(`Array.from(document.querySelectorAll("table.triggers tbody tr"), r => r.dataset.trigger)`, &rows); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows, ",") != "redis-queue,pending-invoices,orders,jobs" {
		t.Errorf("rows %v", rows)
	}
	var listeners string
	if err := pg.EvalInto(`document.querySelector("tr[data-trigger=jobs] .listeners").innerText`, &listeners); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listeners, "listening on n1, n2") || !strings.Contains(listeners, "dialling again on n3") {
		t.Errorf("the NOTIFY trigger's nodes read %q", listeners)
	}
	var errColour, mutedColour string
	if err := pg.EvalInto(`getComputedStyle(document.querySelector("tr[data-trigger=pending-invoices] .err-t")).color`, &errColour); err != nil {
		t.Fatal(err)
	}
	if err := pg.EvalInto(`getComputedStyle(document.querySelector("tr[data-trigger=orders] td:last-child .muted")).color`, &mutedColour); err != nil {
		t.Fatal(err)
	}
	if errColour == mutedColour || errColour == "" {
		t.Errorf("the failing trigger's error is %s, like a quiet cell (%s)", errColour, mutedColour)
	}
	if _, err := pg.Eval(`document.getElementById("h-triggers").scrollIntoView()`); err != nil {
		t.Fatal(err)
	}
	pg.SaveScreenshot(t, "triggers-panel.png")
}
