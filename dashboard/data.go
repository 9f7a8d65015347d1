package dashboard

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/trigger"
)

// What the pages show, read from the admin API. A part that cannot be read
// carries why, and the page shows the rest.

// savings is the savings part of a page: Note says why there is none.
type savings struct {
	OK    bool
	Note  string
	Total reaper.SavingsTotal
	App   reaper.SavingsView
}

func (d *Dashboard) savingsOf(ctx context.Context, appID string) savings {
	var s savings
	var err error
	if appID == "" {
		var rep reaper.SavingsAnswer
		rep, err = d.api.Savings(ctx)
		s.Total = rep.Total
	} else {
		s.App, err = d.api.AppSavings(ctx, appID)
	}
	switch {
	case isNotFound(err):
		s.Note = "Savings are not available on this node."
	case err != nil:
		s.Note = "Savings could not be read: " + errText(err)
	default:
		s.OK = true
	}
	return s
}

// nodeCount is one node's count of something.
type nodeCount struct {
	Node  string
	Count int
}

// appRow is an app as the table shows it.
type appRow struct {
	reaper.AppView
	HeldBy    []nodeCount // every node that holds requests for it
	HeldTotal int
}

// indexData is what the apps page shows.
type indexData struct {
	Now          time.Time
	Store        string // which store, as Options.Store says
	Apps         []appRow
	AppsErr      string
	Settings     reaper.Settings
	SettingsErr  string
	StoreLatency time.Duration
	Cluster      *leader.Status // nil on a single node
	ClusterErr   string
	Savings      savings
	Groups       []groupRow // groups.go
	GroupsErr    string
	Triggers     []trigger.View // the wake triggers; none: no panel
	TriggersErr  string
}

// loadIndex reads the apps page's parts at once.
func (d *Dashboard) loadIndex(ctx context.Context) indexData {
	v := indexData{Now: time.Now(), Store: d.opts.Store}
	var apps []reaper.AppView
	var held []NodeHeld
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		if apps, err = d.api.Apps(ctx); err != nil {
			v.AppsErr = errText(err)
		}
	})
	wg.Go(func() {
		start := time.Now()
		var err error
		if v.Settings, err = d.api.Settings(ctx); err != nil {
			v.SettingsErr = errText(err)
		}
		v.StoreLatency = time.Since(start)
	})
	wg.Go(func() { v.Cluster, v.ClusterErr = d.cluster(ctx) })
	wg.Go(func() { v.Savings = d.savingsOf(ctx, "") })
	var groups []reaper.GroupView
	wg.Go(func() { groups, v.GroupsErr = d.loadGroups(ctx) })
	wg.Go(func() { v.Triggers, v.TriggersErr = d.triggers(ctx) })
	if d.opts.HeldElsewhere != nil {
		wg.Go(func() { held = d.opts.HeldElsewhere(ctx) })
	}
	wg.Wait()
	for _, a := range apps {
		v.Apps = append(v.Apps, d.row(a, held))
	}
	v.Groups = groupRows(groups, v.Apps)
	return v
}

// row adds to an app the requests other nodes hold for it.
func (d *Dashboard) row(a reaper.AppView, elsewhere []NodeHeld) appRow {
	r := appRow{AppView: a}
	if a.Held > 0 {
		r.HeldBy = append(r.HeldBy, nodeCount{d.opts.Node, a.Held})
	}
	for _, n := range elsewhere {
		if c := n.Held[a.AppID]; c > 0 && n.Node != d.opts.Node {
			r.HeldBy = append(r.HeldBy, nodeCount{n.Node, c})
		}
	}
	sort.Slice(r.HeldBy, func(i, j int) bool { return r.HeldBy[i].Node < r.HeldBy[j].Node })
	for _, c := range r.HeldBy {
		r.HeldTotal += c.Count
	}
	return r
}

// cluster reads the cluster's state, each member probed; nil and no error on a
// single node (the API has no /api/cluster there).
func (d *Dashboard) cluster(ctx context.Context) (*leader.Status, string) {
	st, err := d.api.Cluster(ctx, true)
	switch {
	case isNotFound(err):
		return nil, ""
	case err != nil:
		return nil, errText(err)
	}
	return &st, ""
}

// triggers reads the wake triggers; none and no error when the API has no
// such list (a node of an older version).
func (d *Dashboard) triggers(ctx context.Context) ([]trigger.View, string) {
	ans, err := d.api.Triggers(ctx)
	switch {
	case isNotFound(err):
		return nil, ""
	case err != nil:
		return nil, errText(err)
	}
	return ans.Triggers, ""
}

// appData is what an app's page shows.
type appData struct {
	Now         time.Time
	App         appRow
	History     []reaper.Transition
	HistoryErr  string
	Total, Page int
	Wakes       []reaper.WakeView
	WakesErr    string
	Awake       *reaper.AwakeReport
	AwakeErr    string
	Savings     savings
}

// historyPage is how many entries of the history a page shows.
const historyPage = 25

// loadApp reads an app's page; an error is the API's answer about the app
// itself (isNotFound: no such app); its other parts carry their own errors.
func (d *Dashboard) loadApp(ctx context.Context, id string, page int) (appData, error) {
	v := appData{Now: time.Now(), Page: page}
	app, err := d.api.App(ctx, id)
	if err != nil {
		return v, err
	}
	var held []NodeHeld
	var wg sync.WaitGroup
	wg.Go(func() {
		h, err := d.api.History(ctx, id, page, historyPage)
		if err != nil {
			v.HistoryErr = errText(err)
		}
		v.History, v.Total = h.Items, h.Total
	})
	wg.Go(func() {
		ws, err := d.api.Wakes(ctx, id, 20)
		if err != nil {
			v.WakesErr = errText(err)
		}
		v.Wakes = ws.Wakes
	})
	wg.Go(func() {
		aw, err := d.api.Awake(ctx, id)
		if err != nil {
			v.AwakeErr = errText(err)
			return
		}
		v.Awake = &aw
	})
	wg.Go(func() { v.Savings = d.savingsOf(ctx, id) })
	if d.opts.HeldElsewhere != nil {
		wg.Go(func() { held = d.opts.HeldElsewhere(ctx) })
	}
	wg.Wait()
	v.App = d.row(app, held)
	return v, nil
}
