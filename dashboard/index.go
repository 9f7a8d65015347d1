package dashboard

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// warning is a banner at the top of the apps page.
type warning struct {
	Level string // "error", "warn" or "info"
	Title string
	Text  string
}

// warnings are the banners of the apps page: what stops reaper from doing its
// job, or changes what it does.
func (d *Dashboard) warnings(v indexData) []warning {
	var out []warning
	if v.AppsErr != "" || v.SettingsErr != "" {
		out = append(out, warning{"error", "The store is unreachable", cmp.Or(v.AppsErr, v.SettingsErr) +
			". Awake apps are still served; sleeping apps cannot be woken until the store answers."})
	}
	if v.Settings.KillSwitch {
		out = append(out, warning{"warn", "The kill switch is on", "No app is put to sleep, silently. Wakes still happen."})
	}
	if v.Settings.DryRun {
		out = append(out, warning{"info", "Dry run is on", "reaper decides and logs \"would put X to sleep\", but puts no app to sleep."})
	}
	if v.Cluster != nil && v.Cluster.LeaderID == "" {
		out = append(out, warning{"error", "No leader", "The cluster has no leader right now (an election may be under way): nothing is decided until one is elected."})
	}
	if v.ClusterErr != "" {
		out = append(out, warning{"warn", "The cluster's state cannot be read", v.ClusterErr})
	}
	if stale, oldest := staleChecks(v.Apps, v.Now, d.opts.StaleAfter); len(stale) > 0 {
		out = append(out, warning{"warn", "The platform may be unreachable",
			"No check of " + strings.Join(stale, ", ") + " has succeeded for " + span(v.Now.Sub(oldest)) +
				": the platform does not answer, or no leader is deciding. Asleep apps may not wake."})
	}
	for _, a := range v.Apps {
		if a.Status == reaper.StatusError {
			out = append(out, warning{"error", a.AppID + " is in Error", cmp.Or(a.ErrorCause, a.Cause) +
				". reaper leaves it alone until it is reset (on its page)."})
		}
	}
	return out
}

// staleChecks names the managed apps whose last platform check is older than
// limit at now, and the oldest of those checks.
func staleChecks(apps []appRow, now time.Time, limit time.Duration) ([]string, time.Time) {
	var stale []string
	var oldest time.Time
	for _, a := range apps {
		if !a.Managed || a.LastCheckAt == nil || now.Sub(*a.LastCheckAt) < limit {
			continue
		}
		stale = append(stale, a.AppID)
		if oldest.IsZero() || a.LastCheckAt.Before(oldest) {
			oldest = *a.LastCheckAt
		}
	}
	return stale, oldest
}

// listing is how the table is filtered and sorted (the query of the page, so
// that it works without the script and survives a reload).
type listing struct {
	Q      string // words to find in the app's id, name or routes
	Status string // "", awake, asleep, moving, error
	Sort   string // app, status, since, access, sleeps, wake
	Desc   bool
}

var sortKeys = []string{"app", "status", "since", "access", "sleeps", "wake"}

func listingOf(r *http.Request) listing {
	q := r.URL.Query()
	l := listing{Q: strings.TrimSpace(q.Get("q")), Status: q.Get("status"), Sort: q.Get("sort"), Desc: q.Get("dir") == "desc"}
	if !slices.Contains([]string{"awake", "asleep", "moving", "error"}, l.Status) {
		l.Status = ""
	}
	if !slices.Contains(sortKeys, l.Sort) {
		l.Sort = "app"
	}
	return l
}

// searchText is what the filter looks in, lower case.
func searchText(a appRow) string {
	return strings.ToLower(a.AppID + " " + a.Name + " " + strings.Join(a.Routes, " "))
}

// apply filters and sorts the rows.
func (l listing) apply(rows []appRow) []appRow {
	words := strings.Fields(strings.ToLower(l.Q))
	var out []appRow
	for _, a := range rows {
		if l.Status != "" && statusGroup(a.Status) != l.Status {
			continue
		}
		text := searchText(a)
		if !allIn(words, text) {
			continue
		}
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b appRow) int {
		c := l.compare(a, b)
		if l.Desc {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.AppID, b.AppID))
	})
	return out
}

func allIn(words []string, text string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

func (l listing) compare(a, b appRow) int {
	switch l.Sort {
	case "status":
		return strings.Compare(string(a.Status), string(b.Status))
	case "since":
		return cmpTime(a.LastStatusUpdate, b.LastStatusUpdate)
	case "access":
		return cmpTime(a.LastAccess, b.LastAccess)
	case "sleeps":
		return cmpTime(a.ReapAt, b.ReapAt)
	case "wake":
		return cmp.Compare(wakeSeconds(a), wakeSeconds(b))
	default:
		return strings.Compare(a.AppID, b.AppID)
	}
}

// cmpTime orders times, missing ones last.
func cmpTime(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

func wakeSeconds(a appRow) float64 {
	if a.LastWake == nil {
		return -1
	}
	return a.LastWake.Seconds
}

// sortLink is the URL of the table sorted by key: the other direction when it
// is sorted by key already.
func (l listing) sortLink(key string) string {
	n := l
	n.Desc = key == l.Sort && !l.Desc
	n.Sort = key
	return n.url()
}

// sortState is the aria-sort of a column.
func (l listing) sortState(key string) string {
	switch {
	case key != l.Sort:
		return "none"
	case l.Desc:
		return "descending"
	default:
		return "ascending"
	}
}

func (l listing) url() string {
	q := make([]string, 0, 4)
	if l.Q != "" {
		q = append(q, "q="+url.QueryEscape(l.Q))
	}
	if l.Status != "" {
		q = append(q, "status="+l.Status)
	}
	if l.Sort != "app" {
		q = append(q, "sort="+l.Sort)
	}
	if l.Desc {
		q = append(q, "dir=desc")
	}
	if len(q) == 0 {
		return "/"
	}
	return "/?" + strings.Join(q, "&")
}

// index serves the apps page.
func (d *Dashboard) index(w http.ResponseWriter, r *http.Request, s session) {
	f := d.frame(s, "Apps")
	f.Flash = d.takeFlash(w, r)
	v := d.loadIndex(r.Context())
	l := listingOf(r)
	d.render(w, r, http.StatusOK, indexPage(f, v, d.warnings(v), l, l.apply(v.Apps)))
}
