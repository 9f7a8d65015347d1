package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/reaper"
)

// clusterAsker sends wake asks to the job when this node leads, to the leader's
// internal API otherwise. The ask is already stored when it gets here: if no
// leader is known, the next leader's first pass handles it.
type clusterAsker struct {
	node *leader.Node
	job  *reaper.Job
}

func (a clusterAsker) Ask(ctx context.Context, appID string) error {
	if a.node.IsLeader() {
		return a.job.Ask(ctx, appID)
	}
	code, body, err := a.node.Forward(ctx, http.MethodPost, "/internal/asks/"+url.PathEscape(appID), nil)
	if err != nil {
		return err
	}
	if code != http.StatusAccepted {
		return fmt.Errorf("the leader answered %d: %s", code, strings.TrimSpace(string(body)))
	}
	return nil
}

// internalAPI serves the calls nodes make to each other, signed with the cluster
// secret (not the admin token).
func (n *node) internalAPI() http.Handler {
	mux := http.NewServeMux()
	ln := n.parts.leader
	mux.HandleFunc("POST /internal/asks/{app}", func(w http.ResponseWriter, r *http.Request) {
		if !ln.IsLeader() {
			writeJSONError(w, http.StatusMisdirectedRequest, "this node is not the leader")
			return
		}
		n.parts.job.Ask(r.Context(), r.PathValue("app"))
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("POST /internal/members", func(w http.ResponseWriter, r *http.Request) {
		n.addMember(w, r, false)
	})
	mux.HandleFunc("DELETE /internal/members/{id}", func(w http.ResponseWriter, r *http.Request) {
		n.removeMember(w, r, false)
	})
	secret := []byte(n.cfg.Cluster.Secret.Reveal())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !leader.Verify(r, secret, time.Now()) {
			writeJSONError(w, http.StatusUnauthorized, "internal calls must be signed with the cluster secret")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// clusterAPI is the admin API's cluster part (behind the admin token).
//
//	GET    /api/cluster               members, leader, term
//	POST   /api/cluster/members       {"id", "raft_addr", "api_addr"}: add a voter
//	DELETE /api/cluster/members/{id}  remove a member
func (n *node) clusterAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/cluster", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, n.parts.leader.Status())
	})
	mux.HandleFunc("POST /api/cluster/members", func(w http.ResponseWriter, r *http.Request) {
		n.addMember(w, r, true)
	})
	mux.HandleFunc("DELETE /api/cluster/members/{id}", func(w http.ResponseWriter, r *http.Request) {
		n.removeMember(w, r, true)
	})
	return mux
}

// addMember adds a voter on the leader; on another node it forwards the call when
// forward is set (a call from an operator), and refuses it otherwise (a call from
// a node that thought we led).
func (n *node) addMember(w http.ResponseWriter, r *http.Request, forward bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "the body is too large")
		return
	}
	var p config.Peer
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.ID == "" || p.RaftAddr == "" || p.APIAddr == "" {
		writeJSONError(w, http.StatusBadRequest, `the body must be {"id": …, "raft_addr": "host:port", "api_addr": "host:port"}`)
		return
	}
	ln := n.parts.leader
	if !ln.IsLeader() {
		n.forwardOrRefuse(w, r, forward, http.MethodPost, "/internal/members", body)
		return
	}
	if err := ln.AddVoter(r.Context(), leader.Peer{ID: p.ID, RaftAddr: p.RaftAddr, APIAddr: p.APIAddr}); err != nil {
		writeJSONError(w, http.StatusConflict, "adding the member failed: "+err.Error())
		return
	}
	n.log.Info("cluster member added", "id", p.ID, "raft_addr", p.RaftAddr, "api_addr", p.APIAddr)
	writeJSON(w, http.StatusOK, ln.Status())
}

func (n *node) removeMember(w http.ResponseWriter, r *http.Request, forward bool) {
	id := r.PathValue("id")
	ln := n.parts.leader
	if !ln.IsLeader() {
		n.forwardOrRefuse(w, r, forward, http.MethodDelete, "/internal/members/"+url.PathEscape(id), nil)
		return
	}
	if err := ln.RemoveServer(r.Context(), id); err != nil {
		writeJSONError(w, http.StatusConflict, "removing the member failed: "+err.Error())
		return
	}
	n.log.Info("cluster member removed", "id", id)
	writeJSON(w, http.StatusOK, ln.Status())
}

func (n *node) forwardOrRefuse(w http.ResponseWriter, r *http.Request, forward bool, method, path string, body []byte) {
	if !forward {
		writeJSONError(w, http.StatusMisdirectedRequest, "this node is not the leader")
		return
	}
	code, out, err := n.parts.leader.Forward(r.Context(), method, path, body)
	if errors.Is(err, leader.ErrNoLeader) {
		writeJSONError(w, http.StatusServiceUnavailable, "no leader is known right now (an election may be under way); try again")
		return
	}
	if err != nil {
		writeJSONError(w, http.StatusBadGateway, "the leader could not be reached: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(out)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
