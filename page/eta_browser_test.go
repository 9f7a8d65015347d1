package page

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
)

// The page says one thing about how long the wake takes: the learned ETA when
// there is one ("Usually ready in about 9 s", the status line just "Waking
// up."), else the status line's own guess ("This can take a minute or two"),
// never both; and it switches when the live stream brings the first ETA.
func TestWaitingPage_SaysOneThingAboutTheTime(t *testing.T) {
	b := chrometest.Start(t)
	en := locales[0].Messages
	base := Waiting{AppName: "shop", Status: "WaitingForUp", PollInterval: time.Hour}
	known := Progress{Asked: true, Waited: 2 * time.Second, ETA: 9 * time.Second, Samples: 3}
	late := Progress{Asked: true, Waited: 20 * time.Second, ETA: 9 * time.Second, Samples: 3}
	etaText := func(p *chrometest.Page) string {
		return strings.TrimSpace(evalString(t, p, `(e => e.offsetParent === null ? "" : e.innerText)(document.getElementById("reaper-eta"))`))
	}
	for _, c := range []struct {
		name           string
		progress       Progress
		status, eta    string
		guessAllowed   bool
		wantETAVisible bool
	}{
		{"no boot measured yet", Progress{Asked: true, Waited: time.Second}, en.Waking, "", true, false},
		{"a learned ETA", known, en.WakingETA, "Usually ready in about 9 s", false, true},
		{"a wake running late", late, en.WakingETA, "Taking longer than usual (usually about 9 s)", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := base
			w.Progress = c.progress
			s := newScriptedServer(t, w, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
			p := openWaiting(t, b, s)
			p.WaitFor(t, `+document.getElementById("n").textContent >= 1`, waitLong)
			if got := visibleStatus(t, p); got != c.status {
				t.Errorf("status line = %q, want %q", got, c.status)
			}
			if got := etaText(p); got != c.eta {
				t.Errorf("ETA line = %q, want %q", got, c.eta)
			}
			body := evalString(t, p, `document.body.innerText`)
			if guess := strings.Contains(body, "a minute or two"); guess != c.guessAllowed {
				t.Errorf("the page says %q: %v, want %v:\n%s", "a minute or two", guess, c.guessAllowed, body)
			}
		})
	}

	t.Run("the first ETA arrives on the live stream", func(t *testing.T) {
		w := base
		w.Progress = Progress{Asked: true, Waited: time.Second}
		w.EventsURL = "/.well-known/reaper/events"
		release := make(chan struct{})
		s := newScriptedServer(t, w, "en", answer{status: 503, header: http.Header{marker: {"WaitingForUp"}}})
		s.events = func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(rw)
			rw.Write(AppendEvent(nil, EventState, "WaitingForUp", StateWaiting, Progress{Asked: true, Waited: time.Second}))
			rc.Flush()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			rw.Write(AppendEvent(nil, EventState, "WaitingForUp", StateWaiting, known))
			rc.Flush()
			<-r.Context().Done()
		}
		p := openWaiting(t, b, s)
		p.WaitFor(t, `document.documentElement.dataset.live === "events"`, waitLong)
		if got := visibleStatus(t, p); got != en.Waking {
			t.Errorf("before any ETA, status line = %q, want %q", got, en.Waking)
		}
		close(release)
		p.WaitFor(t, `!document.getElementById("reaper-eta").hidden`, waitLong)
		if got := visibleStatus(t, p); got != en.WakingETA {
			t.Errorf("once the ETA is known, status line = %q, want %q", got, en.WakingETA)
		}
	})
}
