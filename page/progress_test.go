package page

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
)

func TestAppendEvent(t *testing.T) {
	p := Progress{Asked: true, Waited: 4200 * time.Millisecond, Accepted: 120 * time.Millisecond, Up: 3900 * time.Millisecond,
		ETA: 9 * time.Second, Samples: 5}
	buf := AppendEvent(make([]byte, 0, 256), EventState, "Up", StateAlmost, p)
	want := "event: state\ndata: {\"status\":\"Up\",\"state\":\"almost\",\"asked_ms\":0,\"waited_ms\":4200,\"accepted_ms\":120,\"up_ms\":3900,\"eta_ms\":9000,\"samples\":5}\n\n"
	if string(buf) != want {
		t.Errorf("got  %q\nwant %q", buf, want)
	}
	if got := string(AppendEvent(nil, EventReady, "Up", StateReady, Progress{})); got != "event: ready\ndata: {\"status\":\"Up\",\"state\":\"ready\"}\n\n" {
		t.Errorf("nothing known: %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { buf = AppendEvent(buf[:0], EventState, "Up", StateAlmost, p) }); n != 0 {
		t.Errorf("%v allocations per event into a buffer large enough, want 0", n)
	}
}

func TestProgress_ETAAndLate(t *testing.T) {
	for _, tt := range []struct {
		p       Progress
		secs    int
		percent int
		late    bool
	}{
		{Progress{}, 0, 0, false},
		{Progress{ETA: 8500 * time.Millisecond}, 9, 0, false},
		{Progress{Asked: true, Waited: 3 * time.Second, ETA: 12 * time.Second}, 12, 25, false},
		{Progress{Asked: true, Waited: 13 * time.Second, ETA: 12 * time.Second}, 12, 100, true},
		{Progress{Asked: false, Waited: 13 * time.Second, ETA: 12 * time.Second}, 12, 0, false},
	} {
		if s, pc, l := tt.p.ETASeconds(), tt.p.Percent(), tt.p.Late(); s != tt.secs || pc != tt.percent || l != tt.late {
			t.Errorf("%+v: %d s, %d %%, late %v; want %d, %d, %v", tt.p, s, pc, l, tt.secs, tt.percent, tt.late)
		}
	}
}

// Without JavaScript the page shows the progress as it was rendered: the phases
// reached with their times, the usual boot time and the bar against it.
func TestRenderWaiting_Progress(t *testing.T) {
	w := Waiting{AppName: "a", Status: "WaitingForUp", Progress: Progress{Asked: true, Waited: 3 * time.Second,
		Accepted: 120 * time.Millisecond, ETA: 12 * time.Second, Samples: 4}}
	page := render(t, w, "fr")
	elems, _, _ := parse(t, page)
	done := map[string]bool{}
	for _, e := range elems {
		if ph, ok := e.attrs["data-phase"]; ok {
			_, done[ph] = e.attrs["data-done"]
		}
		if e.tag == "progress" && (e.attrs["value"] != "25" || e.attrs["max"] != "100") {
			t.Errorf("bar %v, want 25 of 100", e.attrs)
		}
		if e.attrs["id"] == "reaper-eta" {
			if _, hidden := e.attrs["hidden"]; hidden {
				t.Error("the ETA is hidden although known")
			}
		}
	}
	if want := map[string]bool{PhaseAsked: true, PhaseAccepted: true, PhaseUp: false, PhaseReady: false}; !equalMaps(done, want) {
		t.Errorf("phases done %v, want %v", done, want)
	}
	for _, want := range []string{`Prête d’habitude en <span class="eta-n">12</span> s environ`, `<span>Démarrage</span> <span class="ph-t">0.1 s</span>`,
		`data-eta="usual"`, `<ol id="reaper-phases" class="ph" aria-label="Progression">`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	w.Progress.Waited = 13 * time.Second
	if page := render(t, w, "en"); !strings.Contains(page, `data-eta="late"`) || !strings.Contains(page, `value="100"`) {
		t.Error("a wake past its usual time is not shown late")
	}
	elems, _, _ = parse(t, render(t, Waiting{Status: "Down"}, ""))
	for _, e := range elems {
		if _, hidden := e.attrs["hidden"]; e.attrs["id"] == "reaper-eta" && !hidden {
			t.Error("the ETA shows before any boot was measured")
		}
	}
}

func equalMaps(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestNewFields(t *testing.T) {
	ctx := templ.WithNonce(context.Background(), "n0nce")
	w := Waiting{RouteName: "r", AppID: "id", Status: "Down", RequestID: "req", Node: "n1", EventsURL: "/.well-known/reaper/events",
		Progress: Progress{ETA: 7 * time.Second, Samples: 2}}
	f, err := NewFields(ctx, w, "he")
	if err != nil {
		t.Fatal(err)
	}
	if f.AppName != "r" || f.StatusText != "Asleep, wake up requested" || f.State != StateWaiting || f.Lang != "he" || f.Dir != "rtl" ||
		!f.ETA.Known || f.ETA.Seconds != 7 || len(f.Phases) != 4 || !f.Phases[0].Reached || f.Phases[1].Reached || f.Node != "n1" ||
		f.Title != "מעירים את r" {
		t.Errorf("fields %+v", f)
	}
	for piece, want := range map[string]string{
		string(f.Script):   `<noscript><meta http-equiv="refresh" content="5"></noscript><script nonce="n0nce">`,
		string(f.Style):    `<style nonce="n0nce">`,
		string(f.Progress): `<div id="reaper-eta" class="eta">`,
		string(f.Spinner):  `class="sp"`,
	} {
		if !strings.HasPrefix(piece, want) && !strings.Contains(piece, want) {
			t.Errorf("piece %.80q lacks %s", piece, want)
		}
	}
	w.Preview = true
	if f, _ := NewFields(ctx, w, ""); strings.Contains(string(f.Script), "refresh") || !strings.Contains(string(f.Script), `"preview":true`) {
		t.Errorf("a preview's script: %.200s", f.Script)
	}
}

func TestStatusText(t *testing.T) {
	for st, want := range map[string]string{"WaitingForShutdown": "Finishing going to sleep", "Down": "Asleep, wake up requested",
		"WaitingForUp": "Starting", "Up": "Almost ready", "Error": "Error", "Other": "Other"} {
		if got := StatusText(st); got != want {
			t.Errorf("StatusText(%s) = %q, want %q", st, got, want)
		}
	}
}

func TestCompactJS(t *testing.T) {
	got := compactJS("(function (C) {\n\t// a comment\n\tvar a = 1;\n\n\tif (a ||\n\t\tb) {\n\t\tf(a);\n\t}\n})\n")
	if want := "(function (C) {var a = 1;if (a ||\nb) {f(a);}\n})"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if strings.Contains(waitingJS, "//") && !strings.Contains(waitingJS, `"//`) {
		t.Error("a comment is left in the page's script")
	}
}
