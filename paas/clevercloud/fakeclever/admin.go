package fakeclever

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// AdminHelp lists the control endpoints served on AdminURL, for cmd/fakeclever and
// for anyone who opens /_fake/.
const AdminHelp = `fakeclever control endpoints (no authentication: loopback only)
  GET    /_fake/apps                        every app's status now
  POST   /_fake/apps                        add an app: {"id","owner","name","state","zone","flavor",
                                            "not_shutdownable","never_deployed","backend_url","vhosts"}
  GET    /_fake/apps/{id}                   one app's status
  POST   /_fake/apps/{id}/console/{action}  stop | start | redeploy | fail-next-deployment |
                                            cancel-next-deployment | delete
  POST   /_fake/apps/{id}/console/state?state=MODERATED   force a state (empty lifts it)
  POST   /_fake/apps/{id}/console/shutdownable?value=false
  POST   /_fake/faults                      {"app","kind","count","delay","retry_after","status"}
                                            kinds: 5xx rate_limit_403 too_many_429 slow
                                            never_deployed_4014 locked; durations as "2s"
  DELETE /_fake/faults                      clear every fault
  GET    /_fake/calls                       API calls answered (?host=bridge|api|edge)
`

// maxAdminBody bounds the JSON bodies the control endpoints read.
const maxAdminBody = 1 << 16

type adminApp struct {
	ID              string   `json:"id"`
	Owner           string   `json:"owner"`
	Name            string   `json:"name"`
	State           string   `json:"state"`
	Zone            string   `json:"zone"`
	Flavor          string   `json:"flavor"`
	NotShutdownable bool     `json:"not_shutdownable"`
	NeverDeployed   bool     `json:"never_deployed"`
	BackendURL      string   `json:"backend_url"`
	VHosts          []string `json:"vhosts"`
}

type adminFault struct {
	App        string    `json:"app"`
	Kind       FaultKind `json:"kind"`
	Count      int       `json:"count"`
	Delay      string    `json:"delay"`
	RetryAfter string    `json:"retry_after"`
	Status     int       `json:"status"`
}

func (f *Fake) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_fake/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, AdminHelp)
	})
	mux.HandleFunc("GET /_fake/apps", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, f.Apps())
	})
	mux.HandleFunc("POST /_fake/apps", f.adminAddApp)
	mux.HandleFunc("GET /_fake/apps/{id}", func(w http.ResponseWriter, r *http.Request) {
		st, ok := f.App(r.PathValue("id"))
		if !ok {
			adminError(w, http.StatusNotFound, "no such app")
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("POST /_fake/apps/{id}/console/{action}", f.adminConsole)
	mux.HandleFunc("POST /_fake/faults", f.adminInject)
	mux.HandleFunc("DELETE /_fake/faults", func(w http.ResponseWriter, _ *http.Request) {
		f.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /_fake/calls", func(w http.ResponseWriter, r *http.Request) {
		host := r.URL.Query().Get("host")
		calls := f.Calls()
		if host == "edge" {
			calls = f.EdgeCalls()
		}
		out := []Call{}
		for _, c := range calls {
			if host == "" || c.Host == host {
				out = append(out, c)
			}
		}
		writeJSON(w, http.StatusOK, out)
	})
	return mux
}

func adminError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad JSON body: %v", err)
	}
	return nil
}

func (f *Fake) adminAddApp(w http.ResponseWriter, r *http.Request) {
	var in adminApp
	if err := decodeBody(r, &in); err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	a, err := f.addApp(App{ID: in.ID, Owner: in.Owner, Name: in.Name, State: in.State, Zone: in.Zone, Flavor: in.Flavor,
		NotShutdownable: in.NotShutdownable, NeverDeployed: in.NeverDeployed, BackendURL: in.BackendURL, VHosts: in.VHosts})
	if err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	st, _ := f.App(a.ID)
	writeJSON(w, http.StatusCreated, st)
}

func (f *Fake) adminConsole(w http.ResponseWriter, r *http.Request) {
	c := f.Console(r.PathValue("id"))
	var err error
	switch r.PathValue("action") {
	case "stop":
		err = c.Stop()
	case "start":
		err = c.Start()
	case "redeploy":
		err = c.Redeploy()
	case "fail-next-deployment":
		err = c.FailNextDeployment()
	case "cancel-next-deployment":
		err = c.CancelNextDeployment()
	case "delete":
		err = c.Delete()
	case "state":
		err = c.SetState(r.URL.Query().Get("state"))
	case "shutdownable":
		err = c.SetShutdownable(r.URL.Query().Get("value") != "false")
	default:
		adminError(w, http.StatusNotFound, "unknown console action "+r.PathValue("action"))
		return
	}
	switch {
	case errors.Is(err, ErrUnknownApp):
		adminError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrLocked):
		adminError(w, http.StatusConflict, err.Error())
	case err != nil:
		adminError(w, http.StatusBadRequest, err.Error())
	default:
		st, _ := f.App(r.PathValue("id"))
		writeJSON(w, http.StatusOK, st)
	}
}

func (f *Fake) adminInject(w http.ResponseWriter, r *http.Request) {
	var in adminFault
	if err := decodeBody(r, &in); err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	fault := Fault{Kind: in.Kind, Count: in.Count, Status: in.Status}
	for _, d := range []struct {
		s   string
		out *time.Duration
	}{{in.Delay, &fault.Delay}, {in.RetryAfter, &fault.RetryAfter}} {
		if d.s == "" {
			continue
		}
		v, err := conf.ParseDuration(d.s)
		if err != nil {
			adminError(w, http.StatusBadRequest, err.Error())
			return
		}
		*d.out = v
	}
	switch fault.Kind {
	case Fault5xx, FaultRateLimit403, FaultTooMany429, FaultSlow, FaultNeverDeployed4014, FaultLocked:
	default:
		adminError(w, http.StatusBadRequest, "unknown fault kind "+string(in.Kind))
		return
	}
	if fault.Kind == Fault5xx && fault.Status != 0 && (fault.Status < 500 || fault.Status > 599) {
		adminError(w, http.StatusBadRequest, "status must be a 5xx")
		return
	}
	f.Inject(in.App, fault)
	w.WriteHeader(http.StatusNoContent)
}
