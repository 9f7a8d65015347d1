package reaper

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/paas"
)

// Savings: the time an app spent asleep because reaper put it to sleep (from
// the Down its stop led to, until it leaves Down), kept in its record so that a
// restart or a failover keeps the totals, and priced at read time with what the
// driver says the app costs awake (paas.Pricer): money = hours asleep × price per
// hour, GiB-hours = hours asleep × the memory it held when last put to sleep.
// Days and months are UTC.

// SavedTime sums an app's closed stretches asleep: all time, and within the day
// and the month of the latest one.
type SavedTime struct {
	AllTimeSeconds float64 `json:"all_time_seconds"`
	Day            string  `json:"day"` // 2006-01-02, UTC
	DaySeconds     float64 `json:"day_seconds"`
	Month          string  `json:"month"` // 2006-01, UTC
	MonthSeconds   float64 `json:"month_seconds"`
}

func dayKey(t time.Time) string   { return t.UTC().Format("2006-01-02") }
func monthKey(t time.Time) string { return t.UTC().Format("2006-01") }

// add counts the stretch [from, to]: all of it in all time, its part within to's
// day and month in those (starting them afresh when they changed).
func (s SavedTime) add(from, to time.Time) SavedTime {
	if !to.After(from) {
		return s
	}
	u := to.UTC()
	dayStart := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
	monthStart := time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
	s.AllTimeSeconds += to.Sub(from).Seconds()
	if d := dayKey(to); s.Day != d {
		s.Day, s.DaySeconds = d, 0
	}
	s.DaySeconds += to.Sub(latest(from, dayStart)).Seconds()
	if m := monthKey(to); s.Month != m {
		s.Month, s.MonthSeconds = m, 0
	}
	s.MonthSeconds += to.Sub(latest(from, monthStart)).Seconds()
	return s
}

// accountSleep keeps next's savings clocks as the job writes it after prev: a
// stop of reaper's that lands Down starts one; leaving Down closes it into Saved.
func accountSleep(prev, next Record) Record {
	switch {
	case next.Status == StatusDown && prev.Status == StatusWaitingForShutdown && next.SavingSince.IsZero():
		next.SavingSince = next.LastStatusUpdate
	case next.Status != StatusDown && !next.SavingSince.IsZero():
		saved := SavedTime{}
		if next.Saved != nil {
			saved = *next.Saved
		}
		saved = saved.add(next.SavingSince, latest(next.LastStatusUpdate, next.SavingSince))
		next.Saved, next.SavingSince = &saved, time.Time{}
	}
	return next
}

// SavedPeriod is what sleeping saved over one period.
type SavedPeriod struct {
	AsleepSeconds float64 `json:"asleep_seconds"`
	Money         float64 `json:"money"`
	GiBHours      float64 `json:"gib_hours"`
}

// SavingsView is an app's savings, as the admin API shows them.
type SavingsView struct {
	AppID string `json:"app_id,omitempty"`
	// Asleep: asleep now because reaper put it to sleep.
	Asleep       bool        `json:"asleep,omitempty"`
	Currency     string      `json:"currency"`
	PricePerHour float64     `json:"price_per_hour,omitempty"`
	GiB          float64     `json:"gib,omitempty"`
	Today        SavedPeriod `json:"today"`
	Month        SavedPeriod `json:"month"`
	AllTime      SavedPeriod `json:"all_time"`
	// SavingNowPerHour is what the app's sleep saves each hour right now.
	SavingNowPerHour float64 `json:"saving_now_per_hour"`
}

// SavingsOf prices rec's savings at now (pure): the closed stretches and the
// open one, with cost (memory from the record when the driver does not know it).
func SavingsOf(rec Record, cost paas.Cost, now time.Time) SavingsView {
	saved := SavedTime{}
	if rec.Saved != nil {
		saved = *rec.Saved
	}
	if saved.Day != dayKey(now) {
		saved.DaySeconds = 0
	}
	if saved.Month != monthKey(now) {
		saved.MonthSeconds = 0
	}
	asleep := !rec.SavingSince.IsZero()
	if asleep {
		saved = saved.add(rec.SavingSince, latest(now, rec.SavingSince))
	}
	mem := cost.MemoryBytes
	if rec.MemoryBytes > 0 {
		mem = rec.MemoryBytes
	}
	v := SavingsView{AppID: rec.AppID, Asleep: asleep, Currency: cost.Currency, PricePerHour: cost.PerHour, GiB: float64(mem) / (1 << 30)}
	period := func(sec float64) SavedPeriod {
		h := sec / 3600
		return SavedPeriod{AsleepSeconds: round(sec, 0), Money: round(h*v.PricePerHour, 4), GiBHours: round(h*v.GiB, 3)}
	}
	v.Today, v.Month, v.AllTime = period(saved.DaySeconds), period(saved.MonthSeconds), period(saved.AllTimeSeconds)
	if asleep {
		v.SavingNowPerHour = v.PricePerHour
	}
	v.GiB = round(v.GiB, 3)
	return v
}

func round(x float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(x*p) / p
}

// SavingsTotal adds up the apps' savings; Currency is "mixed" (and the money
// sums are left at 0) when the apps are priced in several.
type SavingsTotal struct {
	Currency         string      `json:"currency"`
	Today            SavedPeriod `json:"today"`
	Month            SavedPeriod `json:"month"`
	AllTime          SavedPeriod `json:"all_time"`
	SavingNowPerHour float64     `json:"saving_now_per_hour"`
}

func totalOf(apps []SavingsView) SavingsTotal {
	var t SavingsTotal
	mixed := false
	for _, a := range apps {
		switch {
		case a.Currency == "" || a.PricePerHour == 0:
		case t.Currency == "":
			t.Currency = a.Currency
		case t.Currency != a.Currency:
			mixed = true
		}
		for _, p := range []struct{ into, from *SavedPeriod }{{&t.Today, &a.Today}, {&t.Month, &a.Month}, {&t.AllTime, &a.AllTime}} {
			p.into.AsleepSeconds += p.from.AsleepSeconds
			p.into.Money = round(p.into.Money+p.from.Money, 4)
			p.into.GiBHours = round(p.into.GiBHours+p.from.GiBHours, 3)
		}
		t.SavingNowPerHour = round(t.SavingNowPerHour+a.SavingNowPerHour, 4)
	}
	if mixed {
		t.Currency = "mixed"
		for _, p := range []*SavedPeriod{&t.Today, &t.Month, &t.AllTime} {
			p.Money = 0
		}
		t.SavingNowPerHour = 0
	}
	return t
}

// savingsViews prices every managed app (or the one named), asking the driver
// for its cost (a driver that fails or prices nothing gives zero prices).
func (a *AdminAPI) savingsViews(ctx context.Context, only string) ([]SavingsView, bool, error) {
	recs, err := a.Store.Records(ctx)
	if err != nil {
		return nil, false, err
	}
	byID := map[string]Record{}
	for _, r := range recs {
		byID[r.AppID] = r
	}
	now := time.Now()
	out := []SavingsView{}
	found := false
	for _, m := range a.Engine.Managed() {
		if only != "" && m.App.ID != only {
			continue
		}
		found = true
		var cost paas.Cost
		if a.Pricer != nil {
			cost, _ = a.Pricer.Cost(ctx, m.App)
		}
		rec, ok := byID[m.App.ID]
		if !ok {
			rec = Record{AppID: m.App.ID}
		}
		out = append(out, SavingsOf(rec, cost, now))
	}
	return out, found, nil
}

func (a *AdminAPI) savings(w http.ResponseWriter, r *http.Request) {
	apps, _, err := a.savingsViews(r.Context(), "")
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, SavingsAnswer{Apps: apps, Total: totalOf(apps)})
}

func (a *AdminAPI) appSavings(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	apps, found, err := a.savingsViews(r.Context(), id)
	switch {
	case err != nil:
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
	case !found:
		httpjson.Error(w, http.StatusNotFound, "no route manages an app "+strconv.Quote(id))
	default:
		httpjson.Write(w, http.StatusOK, apps[0])
	}
}
