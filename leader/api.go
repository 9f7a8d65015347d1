package leader

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
)

// API serves the cluster's HTTP calls on a node's admin listener: the internal
// calls other nodes make (Internal) and the operator's cluster endpoints (Admin).
// Both share the membership handlers; only the leader changes membership, and
// what reaches another node is forwarded to the leader (operator calls) or
// refused with 421 (internal calls, from a node that thought this one led).
type API struct {
	Node   *Node
	Asks   AskHandler   // the leader's job, which takes the wake asks
	Logger *slog.Logger // membership changes are logged here
	// Writes serves the admin API's writes that followers forward to the leader
	// (ForwardWrites), under /internal/admin/ with that prefix removed; nil
	// serves none.
	Writes http.Handler
	// Local serves what another node reads of this one's memory (why an app is
	// awake), under /internal/local/ with that prefix removed; nil serves none.
	Local http.Handler

	now func() time.Time // the clock internal calls are checked against; nil: time.Now
}

// Internal returns the handler of the calls nodes make to each other, signed
// with the cluster secret (not the admin token), for this node, and each taken
// once (see Sign). A call signed for another node gets 421; one whose
// signature is missing, wrong or outside SignatureWindow gets 401, and so does
// one whose nonce this node saw already (a replay). When the cluster has TLS,
// a call must also come over TLS with a client certificate that the CAs signed
// (the admin listener's AdminConfig checks it when one is sent): one without
// gets 403, before its signature is looked at.
//
//	POST   /internal/asks/{app}      a wake ask: 202 on the leader, 421 elsewhere
//	POST   /internal/members         {"id", "raft_addr", "api_addr"}: add a voter (leader only, 421 elsewhere)
//	DELETE /internal/members/{id}    remove a member (leader only, 421 elsewhere)
//	*      /internal/admin/…         an admin API write forwarded by a follower (leader only, 421 elsewhere)
//	GET    /internal/local/…         this node's own view (Local)
//	GET    /internal/self            this node's role, term, leader and last contact (Self)
func (a *API) Internal() http.Handler {
	mux := http.NewServeMux()
	if a.Writes != nil {
		writes := http.StripPrefix("/internal/admin", a.Writes)
		mux.HandleFunc("/internal/admin/", func(w http.ResponseWriter, r *http.Request) {
			if !a.Node.IsLeader() {
				httpjson.Error(w, http.StatusMisdirectedRequest, "this node is not the leader")
				return
			}
			writes.ServeHTTP(w, r)
		})
	}
	if a.Local != nil {
		mux.Handle("GET /internal/local/", http.StripPrefix("/internal/local", a.Local))
	}
	mux.HandleFunc("GET /internal/self", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, http.StatusOK, a.Node.Self())
	})
	mux.HandleFunc("POST /internal/asks/{app}", a.ask)
	mux.HandleFunc("POST /internal/members", func(w http.ResponseWriter, r *http.Request) {
		a.addMember(w, r, false)
	})
	mux.HandleFunc("DELETE /internal/members/{id}", func(w http.ResponseWriter, r *http.Request) {
		a.removeMember(w, r, false)
	})
	secret, needCert, self, seen := a.Node.cfg.Secret, a.Node.cfg.TLS != nil, a.Node.cfg.NodeID, a.Node.nonces
	clock := a.now
	if clock == nil {
		clock = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if needCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			httpjson.Error(w, http.StatusForbidden, "internal calls need a client certificate signed by the cluster's CA (cluster.tls.ca)")
			return
		}
		if t := r.Header.Get(HeaderTarget); t != "" && t != self {
			httpjson.Error(w, http.StatusMisdirectedRequest, "this call was signed for node "+strconv.Quote(t)+"; this is "+strconv.Quote(self))
			return
		}
		now := clock()
		s, ok := verify(r, secret, self, now)
		if !ok {
			httpjson.Error(w, http.StatusUnauthorized, "internal calls must be signed with the cluster secret")
			return
		}
		if !seen.first(s, now) {
			if a.Logger != nil {
				a.Logger.Warn("leader: an internal call was refused: its nonce was seen already (a replay)",
					"method", r.Method, "path", r.URL.Path, "signed_at", s.at, "remote", r.RemoteAddr)
			}
			httpjson.Error(w, http.StatusUnauthorized, "this signed call was taken already: every internal call is taken once")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Admin returns the handler of the admin API's cluster part. It does not check
// who calls: the admin listener puts it behind the admin token.
//
//	GET    /api/cluster               members, leader, term, each member probed (ProbeStatus: 2 s at most);
//	                                  ?probe=false: the Raft configuration alone, at once
//	POST   /api/cluster/members       {"id", "raft_addr", "api_addr"}: add a voter
//	DELETE /api/cluster/members/{id}  remove a member
func (a *API) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/cluster", func(w http.ResponseWriter, r *http.Request) {
		// Probed unless asked not to: Raft lists a killed member as a voter like
		// any other, and an operator reading the members must see which answer.
		if probe, err := strconv.ParseBool(r.URL.Query().Get("probe")); err == nil && !probe {
			httpjson.Write(w, http.StatusOK, a.Node.Status())
			return
		}
		httpjson.Write(w, http.StatusOK, a.Node.ProbeStatus(r.Context()))
	})
	mux.HandleFunc("POST /api/cluster/members", func(w http.ResponseWriter, r *http.Request) {
		a.addMember(w, r, true)
	})
	mux.HandleFunc("DELETE /api/cluster/members/{id}", func(w http.ResponseWriter, r *http.Request) {
		a.removeMember(w, r, true)
	})
	return mux
}

// ask hands a forwarded wake ask to the job. The ask is stored already, and the
// job never refuses one: the caller only needs to know it arrived.
func (a *API) ask(w http.ResponseWriter, r *http.Request) {
	if !a.Node.IsLeader() {
		httpjson.Error(w, http.StatusMisdirectedRequest, "this node is not the leader")
		return
	}
	_ = a.Asks.Ask(r.Context(), r.PathValue("app"))
	w.WriteHeader(http.StatusAccepted)
}

// AdminPrefixes are the paths under which Admin serves (the patterns of an
// http.ServeMux), and InternalPrefix the one of Internal: the admin listener
// mounts the handlers on these.
var AdminPrefixes = []string{"/api/cluster", "/api/cluster/"}

// InternalPrefix is the path under which Internal serves.
const InternalPrefix = "/internal/"

// MemberRequest is the body of a call that adds a member (POST
// /api/cluster/members, and /internal/members between nodes). The cluster's
// calls answer a Status.
type MemberRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
}

// addMember adds a voter on the leader; on another node it forwards the call when
// forward is set (a call from an operator), and refuses it otherwise (a call from
// a node that thought we led).
func (a *API) addMember(w http.ResponseWriter, r *http.Request, forward bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "the body is too large")
		return
	}
	var p MemberRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.ID == "" || p.RaftAddr == "" || p.APIAddr == "" {
		httpjson.Error(w, http.StatusBadRequest, `the body must be {"id": …, "raft_addr": "host:port", "api_addr": "host:port"}`)
		return
	}
	if !a.Node.IsLeader() {
		a.forwardOrRefuse(w, r, forward, http.MethodPost, "/internal/members", body)
		return
	}
	if err := a.Node.AddVoter(r.Context(), Peer(p)); err != nil {
		httpjson.Error(w, http.StatusConflict, "adding the member failed: "+err.Error())
		return
	}
	a.Logger.Info("cluster member added", "id", p.ID, "raft_addr", p.RaftAddr, "api_addr", p.APIAddr)
	httpjson.Write(w, http.StatusOK, a.Node.Status())
}

func (a *API) removeMember(w http.ResponseWriter, r *http.Request, forward bool) {
	id := r.PathValue("id")
	if !a.Node.IsLeader() {
		a.forwardOrRefuse(w, r, forward, http.MethodDelete, "/internal/members/"+url.PathEscape(id), nil)
		return
	}
	if err := a.Node.RemoveServer(r.Context(), id); err != nil {
		httpjson.Error(w, http.StatusConflict, "removing the member failed: "+err.Error())
		return
	}
	a.Logger.Info("cluster member removed", "id", id)
	httpjson.Write(w, http.StatusOK, a.Node.Status())
}

// forwardOrRefuse passes a membership call that reached a node other than the
// leader on to the leader, or refuses it with 421 when forward is not set.
func (a *API) forwardOrRefuse(w http.ResponseWriter, r *http.Request, forward bool, method, path string, body []byte) {
	if !forward {
		httpjson.Error(w, http.StatusMisdirectedRequest, "this node is not the leader")
		return
	}
	code, out, err := a.Node.Forward(r.Context(), method, path, body)
	if errors.Is(err, ErrNoLeader) {
		httpjson.Error(w, http.StatusServiceUnavailable, "no leader is known right now (an election may be under way); try again")
		return
	}
	if err != nil {
		httpjson.Error(w, http.StatusBadGateway, "the leader could not be reached: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(out)
}

// maxForwardedBody bounds the body of an admin write forwarded to the leader.
const maxForwardedBody = 64 << 10

// ForwardWrites wraps the admin API: on the leader, or for a read (GET, HEAD),
// it serves the call itself; on a follower, a write goes to the leader's
// /internal/admin/ (signed), and its answer comes back as the leader gave it. So
// every action meets the job where it decides, whichever node the operator uses.
func (a *API) ForwardWrites(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || a.Node.IsLeader() {
			api.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxForwardedBody))
		if err != nil {
			httpjson.Error(w, http.StatusRequestEntityTooLarge, "the body is larger than 64 KiB")
			return
		}
		code, out, err := a.Node.Forward(r.Context(), r.Method, "/internal/admin"+r.URL.RequestURI(), body)
		switch {
		case errors.Is(err, ErrNoLeader):
			httpjson.Error(w, http.StatusServiceUnavailable, "no leader is known right now (an election may be under way); try again")
		case err != nil:
			httpjson.Error(w, http.StatusBadGateway, "the leader could not be reached: "+err.Error())
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write(out)
		}
	})
}

// Gather calls GET path on every other member whose API address is known, at
// once, and returns the bodies of the 200 answers; members that fail or time out
// are left out (it waits 2 s at most).
func (a *API) Gather(ctx context.Context, path string) [][]byte {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st := a.Node.Status()
	var (
		mu  sync.Mutex
		out [][]byte
		wg  sync.WaitGroup
	)
	for _, m := range st.Members {
		if m.ID == st.ID || m.APIAddr == "" {
			continue
		}
		wg.Go(func() {
			code, body, err := a.Node.Call(ctx, m.ID, m.APIAddr, http.MethodGet, path, nil)
			if err != nil || code != http.StatusOK {
				return
			}
			mu.Lock()
			out = append(out, body)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
