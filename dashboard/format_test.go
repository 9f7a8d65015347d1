package dashboard

import (
	"testing"
	"time"

	"github.com/reapergw/reaper/reaper"
)

func TestRel(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "just now", -45 * time.Second: "45 s ago", 3*time.Minute + 5*time.Second: "in 3 min 5 s",
		-2 * time.Hour: "2 h ago", 26 * time.Hour: "in 1 d 2 h",
	} {
		if got := rel(t0, t0.Add(d)); got != want {
			t.Errorf("rel(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestUntil(t *testing.T) {
	if got := until(t0, t0.Add(90*time.Second)); got != "in 1 min 30 s" {
		t.Errorf("until 90 s ahead = %q", got)
	}
	if got := until(t0, t0.Add(-3*time.Second)); got != "any moment" {
		t.Errorf("until 3 s past = %q, want any moment", got)
	}
}

func TestSavedTile(t *testing.T) {
	p := reaper.SavedPeriod{AsleepSeconds: 5400, Money: 0.075, GiBHours: 0.75}
	for _, tt := range []struct {
		currency, value, sub string
	}{
		{"EUR", "€0.08", "1 h 30 min asleep, 0.75 GiB·h freed"},
		{"CHF", "0.08 CHF", "1 h 30 min asleep, 0.75 GiB·h freed"},
		{"", "1 h 30 min", "asleep, 0.75 GiB·h freed; no price set"},
		{"mixed", "1 h 30 min", "asleep; priced in several currencies"},
	} {
		v := savedTile("Today", true, p, tt.currency)
		if v.Value != tt.value || v.Sub != tt.sub {
			t.Errorf("%q: %q / %q, want %q / %q", tt.currency, v.Value, v.Sub, tt.value, tt.sub)
		}
	}
	if v := savedTile("Today", true, reaper.SavedPeriod{}, ""); v.Value != "nothing yet" {
		t.Errorf("an unpriced period with no sleep shows %q, want nothing yet", v.Value)
	}
	if v := savingNowTile(true, 0.02, "mixed"); v.Value != "—" {
		t.Errorf("saving now in mixed currencies shows %q, want a dash (the API gives no sum)", v.Value)
	}
}

func TestNewWakeChart(t *testing.T) {
	ask := t0
	w := reaper.WakeTimes{AskedAt: ask, AcceptedAt: ask.Add(time.Second), UpAt: ask.Add(3 * time.Second)}
	c := newWakeChart([]reaper.WakeView{{WakeTimes: w, Phases: w.Durations(), Seconds: 3}, {WakeTimes: w, Phases: w.Durations()[:1], Seconds: 1}})
	if len(c.Bars) != 2 || len(c.Bars[0].Segs) != 2 || len(c.Bars[1].Segs) != 1 {
		t.Fatalf("bars %+v", c.Bars)
	}
	first := c.Bars[0]
	end := first.Segs[1].X + first.Segs[1].W
	if first.Segs[0].X != chartLeft || end > chartWidth-chartRight+0.01 {
		t.Errorf("the longest wake spans %v to %v, want from %v within %v", first.Segs[0].X, end, chartLeft, chartWidth-chartRight)
	}
	if c.Bars[1].Y <= first.Y || c.Height <= c.AxisY {
		t.Errorf("rows and axis out of order: %+v", c)
	}
	var labels []string
	for _, tk := range c.Ticks {
		labels = append(labels, tk.Label)
	}
	if got := labels[len(labels)-1]; got != "3 s" {
		t.Errorf("axis %v, want it to end at 3 s", labels)
	}
}

func TestHistoryEntries(t *testing.T) {
	w := reaper.WakeTimes{AskedAt: t0, AcceptedAt: t0.Add(time.Second), UpAt: t0.Add(3 * time.Second)}
	w2 := w
	w2.FirstAnswerAt = t0.Add(3500 * time.Millisecond)
	items := []reaper.Transition{
		{Kind: reaper.EventWake, Phases: &w}, // the platform's entry, then the first answer's
		{Kind: reaper.EventWake, Phases: &w2},
		{Kind: reaper.EventPrewake, Cause: "hit"},
		{From: "Down", To: "WaitingForUp", Cause: "woken"},
	}
	got := mergeWakes(items)
	if len(got) != 3 || got[0].Phases != &w2 {
		t.Fatalf("merged history %+v: want one wake entry, the one with the first answer", got)
	}
	for _, tt := range []struct {
		t            reaper.Transition
		title, class string
	}{
		{got[0], "Woke in 3.5 s", "k-wake"},
		{got[1], "Pre-wake: hit", "k-prewake"},
		{got[2], "Down → WaitingForUp", "st-waking"},
	} {
		if title, class := entryTitle(tt.t), entryKind(tt.t); title != tt.title || class != tt.class {
			t.Errorf("entry %+v: %q %q, want %q %q", tt.t, title, class, tt.title, tt.class)
		}
	}
}

func TestMemory(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 900: "900 B", 1024: "1.00 KiB", 512 << 10: "512 KiB", 40064 << 10: "39.1 MiB",
		3 << 29: "1.50 GiB", 5 << 40: "5.00 TiB", 2000 << 40: "2000 TiB",
	} {
		if got := memory(n); got != want {
			t.Errorf("memory(%d) = %q, want %q", n, got, want)
		}
	}
}
