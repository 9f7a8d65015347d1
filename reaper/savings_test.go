package reaper

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

func TestSavedTime_SplitsDaysAndMonths(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name             string
		start            SavedTime
		from, to         string
		all, day, month  float64
		dayKey, monthKey string
	}{
		{"within a day", SavedTime{}, "2026-12-01T10:00:00Z", "2026-12-01T12:00:00Z", 7200, 7200, 7200, "2026-12-01", "2026-12"},
		{"across midnight: the day counts from midnight", SavedTime{}, "2026-12-01T23:00:00Z", "2026-12-02T01:00:00Z", 7200, 3600, 7200, "2026-12-02", "2026-12"},
		{"across a month", SavedTime{}, "2026-11-30T22:00:00Z", "2026-12-01T02:00:00Z", 14400, 7200, 7200, "2026-12-01", "2026-12"},
		{"same day adds", SavedTime{AllTimeSeconds: 100, Day: "2026-12-01", DaySeconds: 100, Month: "2026-12", MonthSeconds: 100},
			"2026-12-01T10:00:00Z", "2026-12-01T10:01:00Z", 160, 160, 160, "2026-12-01", "2026-12"},
		{"a new day starts afresh, the month goes on", SavedTime{AllTimeSeconds: 100, Day: "2026-12-01", DaySeconds: 100, Month: "2026-12", MonthSeconds: 100},
			"2026-12-03T10:00:00Z", "2026-12-03T10:01:00Z", 160, 60, 160, "2026-12-03", "2026-12"},
		{"in another zone, UTC days", SavedTime{}, "2026-12-01T23:30:00-02:00", "2026-12-02T00:30:00-02:00", 3600, 3600, 3600, "2026-12-02", "2026-12"},
		{"an empty stretch changes nothing", SavedTime{Day: "x"}, "2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", 0, 0, 0, "x", ""},
	} {
		got := c.start.add(at(c.from), at(c.to))
		if got.AllTimeSeconds != c.all || got.DaySeconds != c.day || got.MonthSeconds != c.month || got.Day != c.dayKey || got.Month != c.monthKey {
			t.Errorf("%s: %+v; want all %v, day %s %v, month %s %v", c.name, got, c.all, c.dayKey, c.day, c.monthKey, c.month)
		}
	}
}

func TestAccountSleep(t *testing.T) {
	t0 := dtNow
	down := func(r Record, at time.Time) Record { r.Status, r.LastStatusUpdate = StatusDown, at; return r }
	up := Record{AppID: "a", Status: StatusUp}
	stopping := Record{AppID: "a", Status: StatusWaitingForShutdown}
	// Our stop lands Down: the clock starts.
	r := accountSleep(stopping, down(stopping, t0))
	if !r.SavingSince.Equal(t0) || r.Saved != nil {
		t.Fatalf("after our stop: %+v", r)
	}
	// Staying Down keeps it; leaving Down closes it.
	r2 := accountSleep(r, r)
	if !r2.SavingSince.Equal(t0) {
		t.Fatalf("still Down: %+v", r2)
	}
	waking := r2
	waking.Status, waking.LastStatusUpdate = StatusWaitingForUp, t0.Add(time.Hour)
	r3 := accountSleep(r2, waking)
	if !r3.SavingSince.IsZero() || r3.Saved == nil || r3.Saved.AllTimeSeconds != 3600 {
		t.Fatalf("after waking: %+v (saved %+v); want one hour saved, clock stopped", r3, r3.Saved)
	}
	// Stopped from outside: not reaper's saving.
	if r := accountSleep(up, down(up, t0)); !r.SavingSince.IsZero() {
		t.Fatalf("a stop from outside counts: %+v", r)
	}
}

func TestSavingsOf(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := Record{AppID: "a", SavingSince: now.Add(-2 * time.Hour), MemoryBytes: 512 << 20,
		Saved: &SavedTime{AllTimeSeconds: 36000, Day: "2026-11-30", DaySeconds: 3600, Month: "2026-11", MonthSeconds: 7200}}
	v := SavingsOf(rec, paas.Cost{PerHour: 0.5, Currency: "EUR", MemoryBytes: 1 << 30}, now)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if !v.Asleep || v.GiB != 0.5 || v.PricePerHour != 0.5 || v.SavingNowPerHour != 0.5 {
		t.Fatalf("view %+v; want asleep, 0.5 GiB (the record's), 0.5 EUR/h", v)
	}
	if !near(v.Today.AsleepSeconds, 7200) || !near(v.Today.Money, 1) || !near(v.Today.GiBHours, 1) {
		t.Errorf("today %+v; want the open 2 h only (yesterday's hour is another day)", v.Today)
	}
	if !near(v.Month.AsleepSeconds, 7200) || !near(v.AllTime.AsleepSeconds, 43200) || !near(v.AllTime.Money, 6) {
		t.Errorf("month %+v, all time %+v; want 2 h (November is over) and 12 h (6 EUR)", v.Month, v.AllTime)
	}
	awake := SavingsOf(Record{AppID: "b"}, paas.Cost{PerHour: 1, Currency: "USD"}, now)
	if awake.Asleep || awake.SavingNowPerHour != 0 || awake.AllTime.Money != 0 {
		t.Errorf("an app never put to sleep: %+v", awake)
	}
	total := totalOf([]SavingsView{v, awake})
	if total.Currency != "mixed" || total.AllTime.Money != 0 || !near(total.AllTime.AsleepSeconds, 43200) {
		t.Errorf("total over EUR and USD: %+v; want mixed, no money sum, the hours", total)
	}
	if total := totalOf([]SavingsView{v, v}); total.Currency != "EUR" || !near(total.AllTime.Money, 12) || !near(total.SavingNowPerHour, 1) {
		t.Errorf("total of two: %+v", total)
	}
}

type fixedPrice paas.Cost

func (f fixedPrice) Cost(context.Context, paas.App) (paas.Cost, error) { return paas.Cost(f), nil }

// An app reaper puts to sleep saves from its stop until it wakes, through the
// API, kept in the store.
func TestAdminAPI_Savings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Set("app", paastest.App{State: paas.StateShouldBeUp})
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		h := (&AdminAPI{Engine: e.engine, Store: e.store, Pricer: fixedPrice{PerHour: 2, Currency: "EUR", MemoryBytes: 1 << 30}}).Handler()
		time.Sleep(20 * time.Minute) // idle past the grace period: reaper puts it to sleep
		settle()
		if st, _ := e.engine.Record("app"); st.Status != StatusDown {
			t.Fatalf("after 20 idle minutes: %s, want Down", st.Status)
		}
		time.Sleep(90 * time.Minute)
		code, body, _ := call(t, h, "GET", "/api/apps/app/savings", "")
		all := body["all_time"].(map[string]any)
		if code != 200 || body["asleep"] != true || body["saving_now_per_hour"] != float64(2) || all["asleep_seconds"].(float64) < 90*60-60 {
			t.Fatalf("while asleep: %d %v; want asleep 90 min, saving 2 EUR/h", code, body)
		}
		do(t.Context(), p, apiRequest("GET", "/"), false) // a request wakes it
		settle()
		code, body, _ = call(t, h, "GET", "/api/savings", "")
		apps := body["apps"].([]any)
		total := body["total"].(map[string]any)
		app := apps[0].(map[string]any)
		money := total["all_time"].(map[string]any)["money"].(float64)
		if code != 200 || len(apps) != 1 || app["asleep"] == true || money < 3 || money > 3.2 || total["saving_now_per_hour"] != float64(0) {
			t.Fatalf("after the wake: %d %v; want 90 to 95 min closed (3 to 3.2 EUR: it went down within the 20 idle minutes), nothing saved now", code, body)
		}
		if rec, _, _ := e.store.Record(t.Context(), "app"); rec.Saved == nil || rec.Saved.AllTimeSeconds < 90*60-60 {
			t.Fatalf("the stored record keeps %+v, want the 1.5 h", rec.Saved)
		}
		if code, _, _ := call(t, h, "GET", "/api/apps/nope/savings", ""); code != 404 {
			t.Errorf("unknown app: %d", code)
		}
	})
}
