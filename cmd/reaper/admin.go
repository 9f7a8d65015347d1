package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/httpjson"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/metrics"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/reaper"
)

// adminHandler serves the admin listener: /healthz and /readyz for anyone (load
// balancers, orchestrators), /internal/ for the other nodes of a cluster (signed
// with the cluster secret, and with cluster.tls from a client certificate of the
// cluster's CA; nil on a single node), /metrics for anyone when metricsPublic,
// everything else only with the admin token.
func adminHandler(token conf.Secret, ready *readiness, api, internal, metrics http.Handler, metricsPublic bool) http.Handler {
	mux := http.NewServeMux()
	if metricsPublic {
		mux.Handle("GET /metrics", metrics)
	}
	if internal != nil {
		mux.Handle("/internal/", internal)
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
	want := []byte("Bearer " + token.Reveal())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !token.IsSet() {
			httpjson.Error(w, http.StatusNotFound, "the admin API is off: node.admin_token is not set")
			return
		}
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="reaper"`)
			httpjson.Error(w, http.StatusUnauthorized, "a valid admin token is required (Authorization: Bearer <node.admin_token>)")
			return
		}
		api.ServeHTTP(w, r)
	})
	return mux
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
		mux.Handle("/api/cluster", cluster)
		mux.Handle("/api/cluster/", cluster)
	}
	mux.Handle("/api/apps", api)
	mux.Handle("/api/apps/", api)
	mux.Handle("/api/settings", api)
	mux.Handle("/api/events", api)
	mux.Handle("/api/savings", api)
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
	writes := n.adminOf().Handler()
	return &leader.API{Node: n.parts.leader, Asks: n.parts.job, Logger: n.log, Writes: writes, Local: local}
}

// adminOf is the node's reaper admin API, pricing savings with the driver when
// it can.
func (n *node) adminOf() *reaper.AdminAPI {
	pricer, _ := n.parts.driver.(paas.Pricer)
	return &reaper.AdminAPI{Engine: n.parts.engine, Store: n.parts.store, Pricer: pricer}
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
