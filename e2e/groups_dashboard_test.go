package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/internal/testwait"
)

// The dashboard in a real Chromium shows the group as a row that opens on its
// members in start order; the group's Wake wakes all three, which the row
// shows live (3/3 up) while it stays open.
func TestGroups_DashboardInChromium(t *testing.T) {
	b := chrometest.Start(t)
	p := startReaper(t, t.TempDir(), groupConfig(t))
	testwait.For(t, 15*time.Second, "every member Down", func() bool { return allDown(p, 0, "web", "api", "worker") })
	shots := screenshotDir(t)
	pg := b.NewPage(t)
	viewport(t, pg, 1280, 800)
	media(t, pg, "light")
	navigate(t, pg, "http://"+p.admin+"/")
	eval(t, pg, `document.getElementById("token").value = `+jsString(e2eAdminToken)+`;
		document.getElementById("name").value = "alice"; document.querySelector("form").requestSubmit()`)
	pg.WaitFor(t, `location.pathname === "/" && document.querySelector('details[data-group-id="shop"]') !== null`, waitFor)
	summary := evalString(t, pg, `document.querySelector('details[data-group-id="shop"] summary').innerText`)
	for _, want := range []string{"shop", "0/3 up", "api → web → worker", "asleep"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the group's row reads %q: want %q in it", summary, want)
		}
	}
	eval(t, pg, `document.querySelector('details[data-group-id="shop"] summary').click()`)
	var members []string
	evalInto(t, pg, `Array.from(document.querySelectorAll('details[data-group-id="shop"] tr[data-app]'), r => r.dataset.app + ":" + r.querySelector(".bt").textContent)`, &members)
	if strings.Join(members, ",") != "api:Down,web:Down,worker:Down" {
		t.Errorf("the open group lists %v, want its members in start order, Down", members)
	}
	pg.WaitFor(t, `document.getElementById("live").dataset.state === "on"`, waitFor)
	shoot(t, pg, shots, "groups-asleep-light")

	act(t, pg, shots, "wake", "Wake every app of shop?")
	pg.WaitFor(t, `document.querySelector('details[data-group-id="shop"] summary').innerText.includes("3/3 up")`, waitFor)
	if open := evalString(t, pg, `String(document.querySelector('details[data-group-id="shop"]').open)`); open != "true" {
		t.Error("the group's row closed as the page updated itself")
	}
	if got := evalString(t, pg, `document.querySelector('details[data-group-id="shop"] summary .bt').textContent`); got != "Up" {
		t.Errorf("the group's status reads %q, want Up", got)
	}
	for _, id := range []string{"web", "api", "worker"} {
		if n := starts(p, id); n != 1 {
			t.Errorf("%s started %d times, want once", id, n)
		}
	}
	checkPage(t, pg)
	shoot(t, pg, shots, "groups-awake-light")
}
