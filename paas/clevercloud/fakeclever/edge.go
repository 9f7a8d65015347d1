package fakeclever

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// UpgradeHeader is the header Clever Cloud's edge sets on the 404 it answers for an
// app that has no instance: "no instance yet", not the app's own answer.
const UpgradeHeader = "X-CleverCloudUpgrade"

// notRunningPage is the body of that 404.
const notRunningPage = `<!DOCTYPE html><html><head><title>No application</title></head>` +
	`<body><h1>404 Not Found</h1><p>This application is not running.</p></body></html>`

// proxies caches one reverse proxy per backend URL.
var proxies sync.Map // string → http.Handler

// serveEdge routes a request for an app's domain by its Host header.
func (f *Fake) serveEdge(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	id, ok := f.domains[normHost(r.Host)]
	f.mu.Unlock()
	if !ok {
		rec := &statusRecorder{ResponseWriter: w}
		defer f.recordEdge(r, "", rec)
		// An unknown domain: the edge has nothing for it (no Upgrade header: no
		// app is being woken here).
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rec.WriteHeader(http.StatusNotFound)
		_, _ = rec.Write([]byte("404 Not Found: no application is linked to this domain\n"))
		return
	}
	f.serveEdgeFor(w, r, id)
}

// serveEdgeFor answers as app id's domain: the app's own answer while an instance
// serves it, else the 404 with the Upgrade header.
func (f *Fake) serveEdgeFor(w http.ResponseWriter, r *http.Request, id string) {
	rec := &statusRecorder{ResponseWriter: w}
	defer f.recordEdge(r, id, rec)
	f.mu.Lock()
	a := f.apps[id]
	var v view
	var cfg App
	if a != nil {
		v, cfg = a.view(f.opts.Now(), f.tm), a.App
	}
	f.mu.Unlock()
	if a == nil || !v.serving {
		rec.Header().Set(UpgradeHeader, "true")
		rec.Header().Set("Content-Type", "text/html; charset=utf-8")
		rec.WriteHeader(http.StatusNotFound)
		_, _ = rec.Write([]byte(notRunningPage))
		return
	}
	switch {
	case cfg.Handler != nil:
		cfg.Handler.ServeHTTP(rec, r)
	case cfg.BackendURL != "":
		backendProxy(cfg.BackendURL).ServeHTTP(rec, r)
	default:
		writeJSON(rec, http.StatusOK, map[string]any{
			"app_id": cfg.ID, "name": cfg.Name, "instance_started_at": v.started.UTC().Format(time.RFC3339Nano),
			"method": r.Method, "path": r.URL.Path,
		})
	}
}

func backendProxy(raw string) http.Handler {
	if h, ok := proxies.Load(raw); ok {
		return h.(http.Handler)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "fakeclever: bad BackendURL", http.StatusBadGateway)
		})
	}
	h, _ := proxies.LoadOrStore(raw, httputil.NewSingleHostReverseProxy(u))
	return h.(http.Handler)
}

func (f *Fake) recordEdge(r *http.Request, id string, rec *statusRecorder) {
	st := rec.status
	if st == 0 {
		st = 499
	}
	f.record(Call{Host: "edge", Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, App: id,
		At: f.opts.Now(), Status: st})
}
