package dashboard

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
)

// In a browser the app page's facts say what the app depends on, and, for an
// app whose depends_on is ignored, why, in the error colour. The screenshot is
// kept in $REAPER_SCREENSHOTS or the test's artifacts.
func TestAppPage_DependsOnInABrowser(t *testing.T) {
	b := chrometest.Start(t)
	td := newTestDash(t)
	srv := httptest.NewServer(td.srv)
	t.Cleanup(srv.Close)
	pg := b.NewPage(t)
	if err := pg.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	if err := pg.Navigate(srv.URL + "/apps/shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Eval(`document.getElementById("token").value = "` + testToken + `"; document.querySelector("form").requestSubmit()`); err != nil {
		t.Fatal(err)
	}
	pg.WaitFor(t, `document.getElementById("depends-fact") !== null`, 20*time.Second)
	var shop string
	if err := pg.EvalInto(`document.getElementById("depends-fact").innerText.trim()`, &shop); err != nil {
		t.Fatal(err)
	}
	if shop != "db, cache" {
		t.Errorf("shop's Depends on reads %q", shop)
	}
	if err := pg.Navigate(srv.URL + "/apps/crm"); err != nil {
		t.Fatal(err)
	}
	pg.WaitFor(t, `document.querySelector("#depends-fact .err-t") !== null`, 20*time.Second)
	var crm struct {
		Text, Color, Plain string
	}
	if err := pg.EvalInto(`(() => { const e = document.querySelector("#depends-fact .err-t"); return {Text: e.innerText.trim(), Color: getComputedStyle(e).color, Plain: getComputedStyle(document.getElementById("depends-fact")).color} })()`, &crm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(crm.Text, "crm → mail → crm") || crm.Color == crm.Plain {
		t.Errorf("crm's ignored depends_on reads %q in %s (the fact's colour %s): want the cycle, in the error colour", crm.Text, crm.Color, crm.Plain)
	}
	if _, err := pg.Eval(`document.getElementById("depends-fact").scrollIntoView({block: "center"})`); err != nil {
		t.Fatal(err)
	}
	pg.SaveScreenshot(t, "app-depends-on.png")
}
