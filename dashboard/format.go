package dashboard

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/trigger"
)

// How values are written on the pages. The script (dashboard.js) keeps relative
// times current with the same rules (its rel function).

// statusClass is the CSS class of a status's badge: its colour and icon.
func statusClass(s reaper.Status) string {
	switch s {
	case reaper.StatusUp:
		return "up"
	case reaper.StatusDown:
		return "down"
	case reaper.StatusWaitingForUp:
		return "waking"
	case reaper.StatusWaitingForShutdown:
		return "sleeping"
	case reaper.StatusError:
		return "error"
	default:
		return "init"
	}
}

// statusHelp says what a status means, for the badge's tooltip.
func statusHelp(s reaper.Status) string {
	switch s {
	case reaper.StatusUp:
		return "awake: requests go to the app"
	case reaper.StatusDown:
		return "asleep: the next request wakes it"
	case reaper.StatusWaitingForUp:
		return "waking up: requests wait or get the waiting page"
	case reaper.StatusWaitingForShutdown:
		return "going to sleep"
	case reaper.StatusError:
		return "in Error: reaper leaves it alone until it is reset"
	default:
		return "not observed yet"
	}
}

// statusGroup is what the status filter matches: awake, asleep, moving, error.
func statusGroup(s reaper.Status) string {
	switch s {
	case reaper.StatusUp:
		return "awake"
	case reaper.StatusDown:
		return "asleep"
	case reaper.StatusError:
		return "error"
	default:
		return "moving"
	}
}

// rel writes t relative to now: "12 s ago", "in 3 min", "just now".
func rel(now, t time.Time) string {
	d := t.Sub(now)
	if d > -time.Second && d < time.Second {
		return "just now"
	}
	if d < 0 {
		return span(-d) + " ago"
	}
	return "in " + span(d)
}

// until writes a time to come relative to now: "in 3 min", or "any moment"
// once it has passed (a sleep that is due).
func until(now, t time.Time) string {
	if !t.After(now) {
		return "any moment"
	}
	return rel(now, t)
}

// span writes a length of time with its two largest units: "45 s", "3 min 5 s",
// "2 h 10 min", "3 d 4 h".
func span(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + " s"
	case s < 3600:
		return two(s/60, "min", s%60, "s")
	case s < 86400:
		return two(s/3600, "h", s%3600/60, "min")
	default:
		return two(s/86400, "d", s%86400/3600, "h")
	}
}

func two(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d %s", a, ua)
	}
	return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
}

// seconds writes a short duration given in seconds: "0.42 s", "2.3 s", "1 min 5 s".
func seconds(v float64) string {
	switch {
	case v < 1:
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	case v < 60:
		return strconv.FormatFloat(v, 'f', 1, 64) + " s"
	default:
		return span(time.Duration(v * float64(time.Second)))
	}
}

// stamp is an absolute time for tooltips and <time datetime>.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func iso(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// money writes an amount with its currency: "€1.25", "$0.40", "12.00 CHF".
func money(v float64, currency string) string {
	n := strconv.FormatFloat(math.Round(v*100)/100, 'f', 2, 64)
	switch strings.ToUpper(currency) {
	case "EUR":
		return "€" + n
	case "USD":
		return "$" + n
	case "GBP":
		return "£" + n
	case "":
		return n
	default:
		return n + " " + strings.ToUpper(currency)
	}
}

// phaseLabel names a wake's phase for people.
func phaseLabel(p string) string {
	switch p {
	case reaper.PhaseAccepted:
		return "start accepted"
	case reaper.PhaseUp:
		return "platform up"
	case reaper.PhaseFirstAnswer:
		return "first answer"
	default:
		return p
	}
}

// phaseClass is the CSS class (colour) of a wake's phase.
func phaseClass(p string) string {
	switch p {
	case reaper.PhaseAccepted:
		return "ph1"
	case reaper.PhaseUp:
		return "ph2"
	default:
		return "ph3"
	}
}

// phasesText writes a wake's phases in one line.
func phasesText(ps []reaper.PhaseDuration) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = phaseLabel(p.Phase) + " " + seconds(p.Seconds)
	}
	return strings.Join(parts, ", ")
}

func itoa(n int) string { return strconv.Itoa(n) }

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tileView is a savings tile: its label, its value and the line under it.
type tileView struct {
	Label, Value, Sub string
	OK                bool // false: not available, the tile shows a dash
}

// savedTile is what a period saved: the money when the apps are priced in one
// currency, else the time asleep; the line under it says the rest (time asleep,
// memory freed).
func savedTile(label string, ok bool, p reaper.SavedPeriod, currency string) tileView {
	v := tileView{Label: label, OK: ok}
	asleep := span(time.Duration(p.AsleepSeconds * float64(time.Second)))
	mem := strconv.FormatFloat(p.GiBHours, 'f', -1, 64) + " GiB·h freed"
	switch currency {
	case "":
		v.Value, v.Sub = asleep, "asleep, "+mem+"; no price set"
		if p.AsleepSeconds < 1 {
			v.Value, v.Sub = "nothing yet", "no app slept; no price set"
		}
	case "mixed":
		v.Value, v.Sub = asleep, "asleep; priced in several currencies"
	default:
		v.Value, v.Sub = money(p.Money, currency), asleep+" asleep, "+mem
	}
	return v
}

// savingNowTile is what sleeping saves each hour now.
func savingNowTile(ok bool, perHour float64, currency string) tileView {
	v := tileView{Label: "Saving now", OK: ok, Value: "—"}
	switch currency {
	case "":
		v.Sub = "no price set"
	case "mixed":
		v.Sub = "priced in several currencies"
	default:
		v.Value, v.Sub = money(perHour, currency)+" / h", "while the apps asleep now sleep"
	}
	return v
}

// appCurrency is the currency an app's savings are shown in: none when it has
// no price.
func appCurrency(a reaper.SavingsView) string {
	if a.PricePerHour == 0 {
		return ""
	}
	return a.Currency
}

// appNowTile is what the app's sleep saves each hour now, with its price.
func appNowTile(a reaper.SavingsView) tileView {
	v := savingNowTile(true, a.SavingNowPerHour, appCurrency(a))
	if appCurrency(a) != "" {
		v.Sub = priceText(a)
	}
	return v
}

// clock writes a time of day in UTC, with the date when it is not today's.
func clock(now, t time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04 UTC")
	}
	return t.Format("Jan 2, 15:04 UTC")
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func settingQuestion(label string, on bool) string {
	return "Turn " + strings.ToLower(label) + " " + onOff(on) + "?"
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }

// latency writes how long the store took to answer.
func latency(d time.Duration) string {
	if d < time.Millisecond {
		return "under 1 ms"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}

// rtt writes a probe's round trip, given in milliseconds.
func rtt(ms float64) string {
	if ms < 1 {
		return "under 1 ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// lastAnswer says when an unreachable member last answered this node.
func lastAnswer(p *leader.Probe) string {
	if p.LastAnswerMS == nil {
		return "no answer since this node started"
	}
	return "last answered " + span(time.Duration(*p.LastAnswerMS)*time.Millisecond) + " ago"
}

// probeError is why a member did not answer, without the "dial tcp ADDR: "
// that repeats the address the row shows: "connect: connection refused".
func probeError(e, addr string) string {
	return strings.TrimPrefix(e, "dial tcp "+addr+": ")
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// memory writes a size in bytes as people read it: "512 KiB", "38.2 MiB",
// "1.50 GiB" (three significant digits at most).
func memory(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	switch {
	case u == 0 || v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[u]
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + units[u]
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func joinComma(s []string) string { return strings.Join(s, ", ") }

// approx marks a count that sampling estimated.
func approx(r *reaper.AwakeReport) string {
	if r.Sampled {
		return "≈ "
	}
	return ""
}

// holdWhy is the reason and author of a hold, after its end time.
func holdWhy(h *reaper.KeepWarm) string {
	s := ""
	if h.Reason != "" {
		s += ": " + h.Reason
	}
	if h.By != "" {
		s += ", set by " + h.By
	}
	return s
}

// priceText says what an app costs awake.
func priceText(a reaper.SavingsView) string {
	s := "priced " + money(a.PricePerHour, a.Currency) + " / h awake"
	if a.GiB > 0 {
		s += ", " + strconv.FormatFloat(a.GiB, 'f', -1, 64) + " GiB"
	}
	return s
}

// storeName names the store in the cluster panel.
func storeName(v indexData) string {
	if v.Store == "" {
		return "store"
	}
	return v.Store
}

// plural writes a count with its noun.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return i64(n) + " " + many
}

// triggerKind says what a trigger watches, for its row.
func triggerKind(t trigger.View) string {
	kind := map[string]string{
		trigger.KindRedisList: "redis list", trigger.KindRedisDue: "redis schedule", trigger.KindSQL: "SQL query",
		trigger.KindHTTP: "HTTP check", trigger.KindPostgresNotify: "Postgres NOTIFY", trigger.KindEndpoint: "producer endpoint",
	}[t.Kind]
	switch {
	case t.EverySeconds >= 1:
		kind += ", every " + span(time.Duration(t.EverySeconds*float64(time.Second)))
	case t.EverySeconds > 0:
		kind += ", every " + seconds(t.EverySeconds)
	}
	return kind
}

// listeners says, for a listening trigger merged across nodes, which nodes
// keep its LISTEN and which are dialling it again (failing); both empty for
// the other triggers.
func listeners(t trigger.View) (listening, redialling []string) {
	for _, n := range t.Nodes {
		switch {
		case n.Failing:
			redialling = append(redialling, n.Node)
		case n.Listening:
			listening = append(listening, n.Node)
		}
	}
	return listening, redialling
}

// failuresText is how many looks failed in a row.
func failuresText(n int) string {
	if n == 1 {
		return "the last look failed"
	}
	return strconv.Itoa(n) + " looks failed in a row"
}
