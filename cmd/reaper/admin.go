package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/dashboard"
	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/metrics"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/trigger"
)

// adminHandler serves the admin listener: /healthz and /readyz for anyone (load
// balancers, orchestrators), /internal/ for the other nodes of a cluster (signed
// with the cluster secret, and with cluster.tls from a client certificate of the
// cluster's CA; nil on a single node), /metrics for anyone when metricsPublic,
// the dashboard's pages (dashboard.Paths), which send a browser that is not
// signed in to their sign-in form, and everything else, the admin API, only
// with the admin token (or a dashboard session). Without an admin token, only
// health (and public metrics) answer.
func adminHandler(token conf.Secret, ready *readiness, api, internal, metrics http.Handler, metricsPublic bool, dash *dashboard.Dashboard) http.Handler {
	mux := http.NewServeMux()
	if metricsPublic {
		mux.Handle("GET /metrics", metrics)
	}
	if internal != nil {
		mux.Handle(leader.InternalPrefix, internal)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready.check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(err.Error() + "\n"))
			return
		}
		w.Write([]byte("ok\n"))
	})
	if !token.IsSet() || dash == nil {
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			httpjson.Error(w, http.StatusNotFound, "the admin API is off: node.admin_token is not set")
		})
		return mux
	}
	pages := dash.Handler()
	for _, p := range dashboard.Paths {
		mux.Handle(p, pages)
	}
	mux.Handle("/", dash.Guard(api))
	return mux
}

// dashboard is the node's dashboard over api (the admin API, as adminAPI
// builds it: in a cluster, its writes go to the leader); nil without an
// admin token.
func (n *node) dashboard(api http.Handler) *dashboard.Dashboard {
	if !n.cfg.Node.AdminToken.IsSet() {
		return nil
	}
	opts := dashboard.Options{
		Token: n.cfg.Node.AdminToken.Reveal(), API: api, Node: n.cfg.Node.ID, Logger: n.log,
		Store: n.cfg.Store.Driver, Failures: n.parts.doors, TrustedProxies: n.cfg.Node.TrustedProxiesPrefixes(),
		// Every full pass checks every app: three missed passes mean trouble.
		StaleAfter: 3*n.cfg.Reaper.JobInterval.D() + time.Minute,
	}
	if n.cfg.Store.Driver == config.StoreValkey {
		opts.Store += " at " + n.cfg.Store.Address
	}
	if n.parts.leader != nil {
		capi := n.clusterAPI()
		opts.HeldElsewhere = func(ctx context.Context) []dashboard.NodeHeld {
			var out []dashboard.NodeHeld
			for _, body := range capi.Gather(ctx, "/internal/local/held") {
				var h dashboard.NodeHeld
				if json.Unmarshal(body, &h) == nil {
					out = append(out, h)
				}
			}
			return out
		}
	}
	return dashboard.New(opts)
}

// adminAPI is the authenticated part of the admin listener. In a cluster, writes
// reaching a follower are forwarded to the leader, and why-is-it-awake merges
// every node's counters.
func (n *node) adminAPI() http.Handler {
	mux := http.NewServeMux()
	admin := n.adminOf()
	api := admin.Handler()
	if n.parts.leader != nil {
		capi := n.clusterAPI()
		admin.AwakeElsewhere = func(ctx context.Context, appID string) []reaper.AwakeReport {
			var out []reaper.AwakeReport
			for _, body := range capi.Gather(ctx, "/internal/local/awake/"+url.PathEscape(appID)) {
				var r reaper.AwakeReport
				if json.Unmarshal(body, &r) == nil {
					out = append(out, r)
				}
			}
			return out
		}
		api = capi.ForwardWrites(api)
		cluster := capi.Admin()
		for _, p := range leader.AdminPrefixes {
			mux.Handle(p, cluster)
		}
	}
	for _, p := range reaper.AdminPrefixes {
		mux.Handle(p, api)
	}
	mux.Handle("GET "+trigger.AdminPath, n.parts.triggers.AdminHandler(n.triggersElsewhere()))
	mux.Handle("GET /metrics", n.parts.metrics.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Error(w, http.StatusNotFound, "no such admin endpoint: "+r.URL.Path)
	})
	return mux
}

// clusterAPI serves the cluster's internal calls and the admin API's cluster part
// (only when this node is in a cluster): the leader serves the writes followers
// forward to it, and every node what the others read of its memory.
func (n *node) clusterAPI() *leader.API {
	local := http.NewServeMux()
	local.HandleFunc("GET /awake/{app}", func(w http.ResponseWriter, r *http.Request) {
		rep, ok := n.parts.engine.Awake(r.PathValue("app"), reaper.AwakeKeys)
		if !ok {
			httpjson.Error(w, http.StatusNotFound, "no route on this node manages "+r.PathValue("app"))
			return
		}
		httpjson.Write(w, http.StatusOK, rep)
	})
	local.Handle("GET /triggers", n.parts.triggers.LocalHandler())
	writes := n.adminOf().Handler()
	// What another node's dashboard shows of this one: the requests it holds.
	local.Handle("GET /held", dashboard.HeldHandler(n.cfg.Node.ID, writes))
	return &leader.API{Node: n.parts.leader, Asks: n.parts.job, Logger: n.log, Writes: writes, Local: local}
}

// triggersElsewhere reads the other nodes' views of the triggers (the leader
// runs the polling ones, every node the listening ones); nil on a single node.
func (n *node) triggersElsewhere() func(ctx context.Context) [][]trigger.View {
	if n.parts.leader == nil {
		return nil
	}
	capi := n.clusterAPI()
	return func(ctx context.Context) [][]trigger.View {
		var out [][]trigger.View
		for _, body := range capi.Gather(ctx, "/internal/local/triggers") {
			out = append(out, trigger.DecodeViews(body))
		}
		return out
	}
}

// adminOf is the node's reaper admin API, pricing savings with the driver and
// showing what it measured of the apps, when it can.
func (n *node) adminOf() *reaper.AdminAPI {
	api := &reaper.AdminAPI{Engine: n.parts.engine, Store: n.parts.store}
	if p, ok := n.parts.driver.(paas.Pricer); ok {
		api.Pricer = p
	}
	if m, ok := n.parts.driver.(paas.Meter); ok {
		api.Meter = m
	}
	if n.tcp != nil { // bound before the admin API is served (listenTCP)
		api.TCPRoutes = n.tcp.Views
	}
	return api
}

// watchMetrics registers the collectors that read the node at scrape time.
func (n *node) watchMetrics() {
	pricer, _ := n.parts.driver.(paas.Pricer)
	mn := metrics.Node{Engine: n.parts.engine, Pricer: pricer, Parked: n.gateway.Parked}
	if l := n.parts.leader; l != nil {
		mn.Raft = func() (bool, uint64) { return l.IsLeader(), l.Term() }
	}
	n.parts.metrics.WatchNode(mn)
}
