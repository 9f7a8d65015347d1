package reaper

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/paas"
)

// AdminAPI serves the reaper part of the admin API (behind the admin token, which
// the binary checks): the apps and their history, wake and reset, the settings.
//
//	GET  /api/apps                      every app known to routes or to the store
//	GET  /api/apps/{id}                 one app
//	GET  /api/apps/{id}/history         its transitions, newest first (?page=1&page_size=50)
//	GET  /api/apps/{id}/awake           why it is awake: who moved its idle clock since it woke
//	GET  /api/apps/{id}/wakes           its recent wakes, phase by phase
//	GET  /api/apps/{id}/prewake         its learned visits, the next pre-wake, hits and misses
//	POST /api/apps/{id}/_wake           ask for a wake, as a request would
//	POST /api/apps/{id}/_sleep          put it to sleep now (202; _reap, the reference's name, answers 200); 409 and why when it cannot, unless ?force=true
//	POST /api/apps/{id}/_hold           {"duration": "6h", "reason": "…", "by": "…"}: keep it awake (waking it)
//	DELETE /api/apps/{id}/_hold         end the hold now
//	POST /api/apps/{id}/_reset          an app in Error (or any) back to WaitingForInit
//	GET  /api/groups                    every group, with its members (admingroups.go)
//	GET  /api/groups/{id}               one group
//	(_wake, _sleep, _hold and DELETE _hold take a group's id too: each member, GroupActionAnswer)
//	GET  /api/events                    server-sent events: changes of status, holds, actions, wakes
//	GET  /api/savings                   what sleeping saved, per app and in total (savings.go)
//	GET  /api/apps/{id}/savings         one app's
//	GET  /api/tcp_routes                this node's TCP routes and their connections (admintcp.go)
//
// Actions take an optional JSON body {"by": "…"} (or ?by=), who does it, kept in
// the app's history.
//
//	GET  /api/settings                  {"dry_run": false, "kill_switch": false}
//	PUT  /api/settings                  replace them
type AdminAPI struct {
	Engine *Engine
	Store  Store
	// AwakeElsewhere returns the other nodes' why-is-it-awake reports on an app
	// (in a cluster; nil on a single node). Nodes that cannot be reached are
	// left out.
	AwakeElsewhere func(ctx context.Context, appID string) []AwakeReport
	// Pricer prices the savings (the platform driver, when it is one); nil
	// prices nothing: the time asleep is still counted.
	Pricer paas.Pricer
	// Meter gives what the platform driver measured of each app (its boot
	// time, its memory awake), when it measures; nil: nothing is shown.
	Meter paas.Meter
	// TCPRoutes lists the node's TCP routes with their connections now
	// (tcproute.Server.Views); nil: none. It must not block.
	TCPRoutes func() []TCPRouteView
}

// measureTimeout bounds the memory read that one app's view makes.
const measureTimeout = time.Second

// Handler returns the API's routes on a new mux.
func (a *AdminAPI) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/apps", a.list)
	mux.HandleFunc("GET /api/apps/{id}", a.get)
	mux.HandleFunc("GET /api/apps/{id}/history", a.history)
	mux.HandleFunc("GET /api/apps/{id}/awake", a.awake)
	mux.HandleFunc("GET /api/apps/{id}/wakes", a.wakes)
	mux.HandleFunc("GET /api/apps/{id}/prewake", a.prewake)
	// The actions an operator may ask of a group take its id (admingroups.go).
	mux.HandleFunc("POST /api/apps/{id}/_wake", a.orGroup("wake", a.wake))
	mux.HandleFunc("POST /api/apps/{id}/_sleep", a.orGroup("sleep", a.sleep))
	mux.HandleFunc("POST /api/apps/{id}/_reap", a.reap)
	mux.HandleFunc("POST /api/apps/{id}/_hold", a.orGroup("hold", a.hold))
	mux.HandleFunc("DELETE /api/apps/{id}/_hold", a.orGroup("release", a.release))
	a.groupRoutes(mux)
	mux.HandleFunc("POST /api/apps/{id}/_reset", a.reset)
	mux.HandleFunc("GET /api/events", a.eventStream)
	mux.HandleFunc("GET /api/savings", a.savings)
	mux.HandleFunc("GET /api/apps/{id}/savings", a.appSavings)
	mux.HandleFunc("GET /api/tcp_routes", a.listTCPRoutes)
	mux.HandleFunc("GET /api/settings", a.getSettings)
	mux.HandleFunc("PUT /api/settings", a.putSettings)
	return mux
}

// AppView is an app as the admin API shows it (the reference reaper's shape).
type AppView struct {
	AppID   string `json:"app_id"`
	Status  Status `json:"status"`
	OwnerID string `json:"owner_id,omitempty"`
	Name    string `json:"name,omitempty"`
	// PlatformState is the platform's state at the last observation;
	// CleverState is the same under the reference's name, kept for its scripts.
	PlatformState string `json:"platform_state,omitempty"`
	CleverState   string `json:"clever_state,omitempty"`
	Cause         string `json:"cause,omitempty"`
	ErrorCause    string `json:"error_cause,omitempty"`
	// FailedBoots are its failed boots in a row (exits before it was ready,
	// crashes soon after a wake), while it has some.
	FailedBoots      *FailedBoots `json:"failed_boots,omitempty"`
	LastStatusUpdate *time.Time   `json:"last_status_update"`
	LastUpAt         *time.Time   `json:"last_up_at"`
	LastDownAt       *time.Time   `json:"last_down_at"`
	ActionAt         *time.Time   `json:"action_at"`
	LastCheckAt      *time.Time   `json:"last_check_at"`
	Routes           []string     `json:"routes"`
	GracePeriod      string       `json:"grace_period,omitempty"`
	// GracePeriodFrom says where the grace period comes from when the app set
	// it itself (a container's label reaper.grace_period); absent: its routes.
	GracePeriodFrom string `json:"grace_period_from,omitempty"`
	// PolicyError is what the app says of its own policy and cannot be used
	// (an unreadable label): its routes' values apply.
	PolicyError string `json:"policy_error,omitempty"`
	// DependsOn are the apps it needs up first, as the engine honours them
	// (its depends_on from the file or its labels); absent when none.
	DependsOn []string `json:"depends_on,omitempty"`
	// DependsOnError says why the app's depends_on is ignored: it makes a
	// cycle (spelled out, "a → b → a") through the apps' own labels.
	DependsOnError string     `json:"depends_on_error,omitempty"`
	FailTimeout    string     `json:"fail_timeout,omitempty"`
	LastAccess     *time.Time `json:"last_access"`
	ReapAt         *time.Time `json:"reap_at"`
	AsleepSince    *time.Time `json:"asleep_since"`
	InFlight       int        `json:"in_flight"`
	// Held is how many requests wait for the app on this node now.
	Held    int  `json:"held"`
	Managed bool `json:"managed"`
	// Group is the id of the app's group (groups[]); its reap_at is then the
	// group's: the app sleeps with it (admingroups.go).
	Group string `json:"group,omitempty"`
	// Hold is the operator's keep-warm hold while it is active.
	Hold *KeepWarm `json:"hold"`
	// SleepAsked is an operator's "sleep now" still pending.
	SleepAsked *SleepAsk `json:"sleep_asked"`
	// BusyURL is the busy_url in effect (without its query, which may hold a
	// token), asked before the app is put to sleep; BusyURLFrom says where it
	// comes from: "route <id>", the driver's words for the app's own ("label
	// reaper.busy_url of container worker-1", "config paas.apps[].busy_url"),
	// or "driver hint"; BusyMax is how long a failing one keeps the app up.
	// All absent when it has none.
	BusyURL     string `json:"busy_url,omitempty"`
	BusyURLFrom string `json:"busy_url_from,omitempty"`
	BusyMax     string `json:"busy_max,omitempty"`
	// Busy says why its sleep is put off, while its busy_url says it is busy
	// (or fails); absent otherwise.
	Busy *BusyNote `json:"busy,omitempty"`
	// LastWake is the current or last wake, phase by phase (as far as the record
	// knows it: the first answer is in the history, see /wakes).
	LastWake *WakeView `json:"last_wake"`
	// BootTime is how long this node's driver took for its last start of the
	// app, from the start call to its readiness (docker and process drivers;
	// in a cluster, the leader's); absent when it has not started it.
	BootTime string `json:"boot_time,omitempty"`
	// MemoryBytes is the memory the app held awake when the driver last
	// measured it, at MemoryAt (it may sleep since); absent when never.
	MemoryBytes int64      `json:"memory_bytes,omitempty"`
	MemoryAt    *time.Time `json:"memory_at,omitempty"`
	// TCPRoutes are the app's TCP routes on this node, with their connections
	// (admintcp.go); absent when it has none.
	TCPRoutes []TCPRouteView `json:"tcp_routes,omitempty"`
}

func ptime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// views builds the view of every app, or of one when id is not empty.
func (a *AdminAPI) views(ctx context.Context, id string) ([]AppView, error) {
	recs, err := a.Store.Records(ctx)
	if err != nil {
		return nil, err
	}
	access, err := a.Store.LastAccess(ctx)
	if err != nil {
		return nil, err
	}
	inFlight, err := a.Engine.OpenEverywhere(ctx) // this node's part exact, not as of its last flush
	if err != nil {
		return nil, err
	}
	byID := map[string]Record{}
	for _, r := range recs {
		byID[r.AppID] = r
	}
	managed := map[string]ManagedApp{}
	var order []string
	for _, m := range a.Engine.Managed() {
		managed[m.App.ID] = m
		order = append(order, m.App.ID)
	}
	for _, r := range recs {
		if _, ok := managed[r.AppID]; !ok {
			order = append(order, r.AppID)
		}
	}
	tcp := map[string][]TCPRouteView{}
	for _, t := range a.tcpRoutes("") {
		tcp[t.AppID] = append(tcp[t.AppID], t)
	}
	var out []AppView
	for _, appID := range order {
		if id != "" && appID != id {
			continue
		}
		rec, ok := byID[appID]
		if !ok {
			rec = Record{AppID: appID, Status: StatusWaitingForInit}
		}
		m, isManaged := managed[appID]
		la, _ := a.Engine.LocalTraffic(appID)
		if stored := access[appID]; stored.After(la) {
			la = stored
		}
		held, _ := a.Engine.Held(appID)
		v := AppView{
			AppID: appID, Status: rec.Status, OwnerID: rec.Owner, Name: rec.Name,
			PlatformState: string(rec.PlatformState), CleverState: string(rec.PlatformState), Cause: rec.Cause, ErrorCause: rec.ErrorCause, FailedBoots: rec.Boots,
			LastStatusUpdate: ptime(rec.LastStatusUpdate), LastUpAt: ptime(rec.LastUpAt),
			LastDownAt: ptime(rec.LastDownAt), ActionAt: ptime(rec.ActionAt), LastCheckAt: ptime(rec.LastCheckAt),
			Routes: m.Routes, LastAccess: ptime(la), InFlight: inFlight[appID], Held: held, Managed: isManaged,
		}
		if rec.Status == StatusUp {
			v.Busy = rec.Busy
		}
		if v.Routes == nil {
			v.Routes = []string{}
		}
		if isManaged {
			v.GracePeriod, v.FailTimeout = m.Policy.GracePeriod.String(), m.Policy.FailTimeout.String()
			v.GracePeriodFrom, v.PolicyError, v.DependsOnError = m.GraceFrom, m.PolicyProblem, m.DependsOnProblem
			v.DependsOn = m.DependsOn
			if m.Policy.BusyURL != "" {
				v.BusyURL, v.BusyURLFrom, v.BusyMax = redactURL(m.Policy.BusyURL), m.BusyFrom, m.Policy.BusyMax.String()
			}
			v.ReapAt = ptime(ReapAt(rec, Input{LastAccess: la, Busy: v.InFlight > 0}, m.Policy, time.Now()))
		}
		if rec.Status.Asleep() {
			v.AsleepSince = ptime(rec.LastStatusUpdate)
		}
		if now := time.Now(); rec.Hold.Active(now) {
			v.Hold = rec.Hold
		}
		if rec.SleepAsk.Pending(rec) {
			v.SleepAsked = rec.SleepAsk
		}
		if rec.Wake != nil {
			v.LastWake = &WakeView{WakeTimes: *rec.Wake, Phases: rec.Wake.Durations(), Seconds: rec.Wake.Total().Seconds()}
		}
		a.measure(ctx, &v, paas.App{ID: appID, Owner: rec.Owner}, id != "")
		v.TCPRoutes = tcp[appID]
		out = append(out, v)
	}
	a.withGroups(out, access, inFlight)
	return out, nil
}

// measure adds what the driver measured of the app to its view. One app's view
// (fresh) has its memory read again first if it runs (Pricer.Cost, cached by
// the driver and bounded by measureTimeout); a list shows what was last read,
// without waiting on the platform.
func (a *AdminAPI) measure(ctx context.Context, v *AppView, app paas.App, fresh bool) {
	if a.Meter == nil {
		return
	}
	if fresh && a.Pricer != nil && v.Status == StatusUp {
		ctx, cancel := context.WithTimeout(ctx, measureTimeout)
		_, _ = a.Pricer.Cost(ctx, app) // what it reads is kept by the driver for Measured
		cancel()
	}
	m := a.Meter.Measured(app)
	if m.BootTime > 0 {
		v.BootTime = m.BootTime.Round(time.Millisecond).String()
	}
	if m.MemoryBytes > 0 {
		v.MemoryBytes, v.MemoryAt = m.MemoryBytes, ptime(m.MemoryAt)
	}
}

func (a *AdminAPI) list(w http.ResponseWriter, r *http.Request) {
	vs, err := a.views(r.Context(), "")
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	if vs == nil {
		vs = []AppView{}
	}
	httpjson.Write(w, http.StatusOK, vs)
}

func (a *AdminAPI) get(w http.ResponseWriter, r *http.Request) {
	vs, err := a.views(r.Context(), r.PathValue("id"))
	switch {
	case err != nil:
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
	case len(vs) == 0:
		httpjson.Error(w, http.StatusNotFound, "no app "+strconv.Quote(r.PathValue("id")))
	default:
		httpjson.Write(w, http.StatusOK, vs[0])
	}
}

func (a *AdminAPI) history(w http.ResponseWriter, r *http.Request) {
	page, size := 1, 50
	if s := r.URL.Query().Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			httpjson.Error(w, http.StatusBadRequest, "page must be a whole number from 1")
			return
		}
		page = n
	}
	if s := r.URL.Query().Get("page_size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > HistoryCap {
			httpjson.Error(w, http.StatusBadRequest, "page_size must be a whole number from 1 to "+strconv.Itoa(HistoryCap))
			return
		}
		size = n
	}
	id := r.PathValue("id")
	items, total, err := a.Store.History(r.Context(), id, (page-1)*size, size)
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	if total == 0 {
		// No history: an app no route manages and the store does not know is
		// not found, as GET /api/apps/{id} says (a typo must not look like an
		// app with nothing to show).
		vs, err := a.views(r.Context(), id)
		if err != nil {
			httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
			return
		}
		if len(vs) == 0 {
			httpjson.Error(w, http.StatusNotFound, "no app "+strconv.Quote(id))
			return
		}
	}
	if items == nil {
		items = []Transition{}
	}
	httpjson.Write(w, http.StatusOK, HistoryPage{Items: items, Total: total, Page: page, PageSize: size})
}

func (a *AdminAPI) getSettings(w http.ResponseWriter, r *http.Request) {
	s, err := a.Store.Settings(r.Context())
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the store cannot be read: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, s)
}

func (a *AdminAPI) putSettings(w http.ResponseWriter, r *http.Request) {
	var s Settings
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "the body must be {\"dry_run\": bool, \"kill_switch\": bool}: "+err.Error())
		return
	}
	if err := a.Store.PutSettings(r.Context(), s); err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "the settings cannot be written: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, s)
}
