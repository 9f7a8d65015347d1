package fakeclever

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// apiHandler serves the API as the host k plays: every call is recorded, its
// credential checked, its faults applied, then routed.
func (f *Fake) apiHandler(k hostKind) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/summary", f.getSummary)
	mux.HandleFunc("GET /v2/self", f.getSelf)
	for _, prefix := range []string{"/v2/self", "/v2/organisations/{owner}"} {
		mux.HandleFunc("GET "+prefix+"/applications", f.listApps)
		mux.HandleFunc("GET "+prefix+"/applications/{app}", f.getApp)
		mux.HandleFunc("GET "+prefix+"/applications/{app}/instances", f.listInstances)
		mux.HandleFunc("POST "+prefix+"/applications/{app}/instances", f.startApp)
		mux.HandleFunc("DELETE "+prefix+"/applications/{app}/instances", f.stopApp)
		mux.HandleFunc("GET "+prefix+"/applications/{app}/deployments", f.listDeployments)
	}
	mux.HandleFunc("GET /v4/billing/price-system", f.getPriceSystem)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if isV4(r) {
			writeV4Error(w, http.StatusNotFound, "clever.not-found", "Not Found")
			return
		}
		writeV2Error(w, http.StatusNotFound, 404, "Not Found")
	})

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		call := Call{Host: k.String(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			App: appFromPath(r.URL.Path), At: f.opts.Now(), UserAgent: r.UserAgent(), Accept: r.Header.Get("Accept"),
			ContentLength: r.ContentLength, TransferEncoding: slices.Clone(r.TransferEncoding),
			ContentLengthHeader: slices.Clone(r.Header.Values("Content-Length"))}
		call.State = f.stateOf(call.App, call.At)
		defer func() {
			call.Status = rec.status
			if call.Status == 0 {
				call.Status = 499 // the client went away before any answer
			}
			f.record(call)
		}()
		// The calls take no body: read what came, so that the server watches the
		// connection and cancels r.Context() when the client gives up (a slow
		// answer must then have no effect).
		call.BodyBytes, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		if msg := f.checkAuth(k, r); msg != "" {
			if isV4(r) {
				writeV4Error(rec, http.StatusUnauthorized, "clever.unauthorized", msg)
			} else {
				writeV2Error(rec, http.StatusUnauthorized, 401, msg)
			}
			return
		}
		if fault := f.takeFault(call.App, r); fault != nil {
			call.Fault = string(fault.Kind)
			if answerFault(rec, r, fault, isV4(r)) {
				return
			}
		}
		mux.ServeHTTP(rec, r)
	})
}

// stateOf returns the state the API shows for the app at now, or "" for an
// unknown app.
func (f *Fake) stateOf(appID string, now time.Time) string {
	if appID == "" {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.apps[appID]; a != nil {
		return a.view(now, f.tm).state
	}
	return ""
}

func isV4(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v4/") }

// appFromPath returns the app id a path names (…/applications/{app}/…), or "".
func appFromPath(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "applications" {
			return parts[i+1]
		}
	}
	return ""
}

// owner returns the owner a route names: the user for /v2/self, else {owner}.
func (f *Fake) owner(r *http.Request) string {
	if o := r.PathValue("owner"); o != "" {
		return o
	}
	return f.user()
}

// knownOwnerLocked reports whether the credential can see owner.
func (f *Fake) knownOwnerLocked(owner string) bool {
	if owner == f.user() {
		return true
	}
	for _, o := range f.organisationsLocked() {
		if o == owner {
			return true
		}
	}
	return false
}

// lookupLocked finds the app a route names, or says what the 404 must say. The
// owner must match: another owner's app is "not found or no access".
func (f *Fake) lookupLocked(r *http.Request) (*app, string) {
	owner := f.owner(r)
	if !f.knownOwnerLocked(owner) {
		return nil, "Not Found: organisation " + owner
	}
	a := f.apps[r.PathValue("app")]
	if a == nil || a.Owner != owner {
		return nil, "Not Found: application " + r.PathValue("app")
	}
	return a, ""
}

// lockApp takes f.mu and finds the app the request names. When there is none,
// it answers 404, releases f.mu and reports false; otherwise the caller holds f.mu.
func (f *Fake) lockApp(w http.ResponseWriter, r *http.Request) (*app, bool) {
	f.mu.Lock()
	a, msg := f.lookupLocked(r)
	if a == nil {
		f.mu.Unlock()
		writeNotFound(w, msg)
		return nil, false
	}
	return a, true
}

func writeNotFound(w http.ResponseWriter, msg string) {
	writeV2Error(w, http.StatusNotFound, 4004, msg)
}

func (f *Fake) getSummary(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	now := f.opts.Now()
	byOwner := map[string][]jsonSummaryApp{}
	for _, id := range f.order {
		a := f.apps[id]
		var commit *string
		if d := a.last(); d != nil {
			commit = &d.commit
		}
		byOwner[a.Owner] = append(byOwner[a.Owner], jsonSummaryApp{ID: a.ID, Name: a.Name,
			State: a.view(now, f.tm).state, CommitID: commit, VariantSlug: "node", InstanceType: "node"})
	}
	user := f.user()
	orgas := f.organisationsLocked()
	f.mu.Unlock()

	owner := func(id, name string) jsonSummaryOwner {
		apps := byOwner[id]
		if apps == nil {
			apps = []jsonSummaryApp{}
		}
		return jsonSummaryOwner{ID: id, Name: name, Applications: apps, Addons: []any{}, Consumers: []any{},
			Providers: []any{}, CanPay: true, Role: "ADMIN"}
	}
	s := jsonSummary{User: owner(user, "Fake User")}
	s.User.Email, s.User.Role = "fake@example.com", ""
	// The personal space shows among the organisations too, with the same apps:
	// clients must de-duplicate by app id.
	s.Organisations = append(s.Organisations, owner(user, "Personal space"))
	for _, o := range orgas {
		s.Organisations = append(s.Organisations, owner(o, "Organisation "+o))
	}
	writeJSON(w, http.StatusOK, s)
}

func (f *Fake) getSelf(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jsonSelf{ID: f.UserID(), Email: "fake@example.com", Name: "Fake User",
		Country: "FRANCE", CreationDate: epochMS(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)), Lang: "EN",
		EmailValidated: true, CanPay: true, HasPassword: true})
}

func (f *Fake) appJSONLocked(a *app, now time.Time) jsonApp {
	v := a.view(now, f.tm)
	fl := flavorJSON(a.Flavor)
	j := jsonApp{
		ID: a.ID, Name: a.Name, Zone: a.Zone,
		Instance: jsonInstanceConf{Type: "node", Version: "20240101", Lifetime: "REGULAR",
			Variant:      jsonVariant{ID: "node-variant", Slug: "node", Name: "Node", DeployType: "node"},
			MinInstances: 1, MaxInstances: 1, MaxAllowedInstances: 40, MinFlavor: fl, MaxFlavor: fl, Flavors: []jsonFlavor{fl}},
		Deployment: jsonDeploymentConf{Shutdownable: !a.NotShutdownable, Type: "GIT", RepoState: "CREATED",
			URL:     "git+ssh://git@push-n3-par-clevercloud-customers.services.clever-cloud.com/" + a.ID + ".git",
			HTTPURL: "https://push-n3-par-clevercloud-customers.services.clever-cloud.com/" + a.ID + ".git"},
		// Clever Cloud writes fqdn with a trailing slash: clients normalise it.
		VHosts:       []jsonVHost{{FQDN: DefaultDomain(a.ID) + "/"}},
		CreationDate: epochMS(now.Add(-24 * time.Hour)), Branch: "master", ForceHTTPS: "DISABLED",
		OwnerID: a.Owner, State: v.state, Env: []any{},
	}
	for _, h := range a.VHosts {
		j.VHosts = append(j.VHosts, jsonVHost{FQDN: normHost(h) + "/"})
	}
	if d := a.last(); d != nil {
		j.LastDeploy, j.CommitID = d.num, &d.commit
	}
	return j
}

func (f *Fake) listApps(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	owner := f.owner(r)
	if !f.knownOwnerLocked(owner) {
		f.mu.Unlock()
		writeNotFound(w, "Not Found: organisation "+owner)
		return
	}
	now := f.opts.Now()
	out := []jsonApp{}
	for _, id := range f.order {
		if a := f.apps[id]; a.Owner == owner {
			out = append(out, f.appJSONLocked(a, now))
		}
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (f *Fake) getApp(w http.ResponseWriter, r *http.Request) {
	a, ok := f.lockApp(w, r)
	if !ok {
		return
	}
	j := f.appJSONLocked(a, f.opts.Now())
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, j)
}

func (f *Fake) listInstances(w http.ResponseWriter, r *http.Request) {
	a, ok := f.lockApp(w, r)
	if !ok {
		return
	}
	now := f.opts.Now()
	v := a.view(now, f.tm)
	fl := flavorJSON(a.Flavor)
	out := []jsonInstance{}
	for i, in := range v.instances {
		out = append(out, jsonInstance{ID: in.id, AppID: a.ID, IP: "10.2." + strconv.Itoa(in.deployNum%250) + "." + strconv.Itoa(10+i),
			AppPort: 8080, State: in.state, Flavor: fl, Commit: in.commit, DeployNumber: in.deployNum,
			DeployID: "deployment_" + in.id, InstanceNumber: i, DisplayName: "Fake instance " + strconv.Itoa(i+1),
			CreationDate: epochMS(in.created)})
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (f *Fake) startApp(w http.ResponseWriter, r *http.Request) {
	a, ok := f.lockApp(w, r)
	if !ok {
		return
	}
	d, restart, err := a.start(f.opts.Now(), f.tm)
	if err == nil {
		if c := r.URL.Query().Get("commit"); c != "" {
			d.commit = c
		}
		a.starts++
		if restart {
			a.restarts++
		}
	}
	f.mu.Unlock()
	if err != nil {
		writeModelError(w, err)
		return
	}
	msg := "The application has successfully been queued for deployment."
	if restart {
		msg = "The application has successfully been queued for redeploy."
	}
	writeJSON(w, http.StatusOK, jsonV2Message{ID: 200, Message: msg, Type: "success", DeploymentID: d.uuid})
}

func (f *Fake) stopApp(w http.ResponseWriter, r *http.Request) {
	a, ok := f.lockApp(w, r)
	if !ok {
		return
	}
	_, err := a.stop(f.opts.Now(), f.tm)
	f.mu.Unlock()
	if err != nil {
		writeModelError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jsonV2Message{ID: 200, Message: "The application has been stopped.", Type: "success"})
}

func writeModelError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNeverDeployed):
		writeNeverDeployed(w)
	case errors.Is(err, ErrLocked):
		writeLocked(w)
	case errors.Is(err, ErrModerated):
		writeV2Error(w, http.StatusBadRequest, 400, "The application is moderated or its owner has unpaid invoices: it cannot be started or stopped")
	default:
		writeV2Error(w, http.StatusInternalServerError, 500, "Internal server error")
	}
}

func (f *Fake) listDeployments(w http.ResponseWriter, r *http.Request) {
	limit, offset := -1, 0
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeV2Error(w, http.StatusBadRequest, 400, "limit must be a positive number")
			return
		}
		limit = n
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeV2Error(w, http.StatusBadRequest, 400, "offset must be 0 or more")
			return
		}
		offset = n
	}
	a, ok := f.lockApp(w, r)
	if !ok {
		return
	}
	now := f.opts.Now()
	deps := a.visibleDeployments(now)
	deps = deps[min(offset, len(deps)):]
	if limit >= 0 && limit < len(deps) {
		deps = deps[:limit]
	}
	out := []jsonDeployment{}
	for _, d := range deps {
		jd := jsonDeployment{ID: d.num, UUID: d.uuid, Date: epochMS(d.begin), State: d.state(now), Action: d.action,
			Commit: d.commit, Instances: 1, Author: jsonAuthor{ID: f.user(), Name: "Fake User"}}
		if jd.State != DeploymentWIP && d.cause != "" {
			jd.Cause = &d.cause
		}
		out = append(out, jd)
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (f *Fake) getPriceSystem(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	zone, currency := q.Get("zone_id"), q.Get("currency")
	if currency == "" {
		currency = "EUR"
	}
	if zone == "" {
		writeV4Error(w, http.StatusBadRequest, "clever.billing.missing-zone", "zone_id is required")
		return
	}
	known := false
	for _, z := range zones {
		known = known || z == zone
	}
	if !known {
		writeV4Error(w, http.StatusNotFound, "clever.billing.unknown-zone", "unknown zone "+zone)
		return
	}
	if currency != "EUR" {
		writeV4Error(w, http.StatusBadRequest, "clever.billing.unsupported-currency", "unsupported currency "+currency)
		return
	}
	ps := jsonPriceSystem{ID: "price_system_" + zone, ZoneID: zone, Currency: currency,
		StartedAt: "2024-01-01T00:00:00Z", Countable: []any{}}
	for _, fl := range flavors {
		ps.Runtime = append(ps.Runtime, jsonPrice{Source: "runtime", Flavor: fl.name, TimeUnit: "PT1H",
			Price: fl.price, SlugID: "apps." + fl.name})
	}
	writeJSON(w, http.StatusOK, ps)
}
