package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// jobLogLine returns the line reaper's JSON logger writes for msg.
func jobLogLine(t *testing.T, at time.Time, msg string, args ...any) string {
	t.Helper()
	var b bytes.Buffer
	h := slog.NewJSONHandler(&b, nil)
	r := slog.NewRecord(at, slog.LevelInfo, msg, 0)
	r.Add(args...)
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

func TestParseJobLine_TheJobsOwnLines(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	done := jobLogLine(t, at, msgFirstPass, "term", uint64(7), "took", 42*time.Millisecond)
	l, ok := parseJobLine(done, msgFirstPass, 7)
	if !ok || !l.Time.Equal(at) || l.Term != 7 || time.Duration(l.Took) != 42*time.Millisecond {
		t.Fatalf("parseJobLine(%s) = %+v, %v", done, l, ok)
	}
	for _, tt := range []struct {
		name, line, msg string
		minTerm         uint64
	}{
		{"an older term", done, msgFirstPass, 8},
		{"another message", done, msgJobRunning, 0},
		{"another message that contains it", jobLogLine(t, at, msgFirstPass+" again", "term", 9), msgFirstPass, 0},
		{"not JSON", "job: first pass done term=9", msgFirstPass, 0},
		{"no time", `{"msg":"job: first pass done","term":9}`, msgFirstPass, 0},
	} {
		if l, ok := parseJobLine(tt.line, tt.msg, tt.minTerm); ok {
			t.Errorf("%s: parsed %+v", tt.name, l)
		}
	}
}

// watchedProcess is a process whose log the test writes.
func watchedProcess(name string) *process {
	return &process{name: name, log: newLogWatch(), done: make(chan struct{})}
}

func TestWaitAnyJobLine_FirstNodeToLogIt(t *testing.T) {
	a := &clusterNode{id: "n1", p: watchedProcess("a")}
	b := &clusterNode{id: "n2", p: watchedProcess("b")}
	at := time.Now()
	a.p.log.add([]byte(jobLogLine(t, at, msgFirstPass, "term", 3))) // the old term: not this one
	go b.p.log.add([]byte(jobLogLine(t, at, msgFirstPass, "term", 4)))
	l, n, err := waitAnyJobLine(context.Background(), []*clusterNode{a, b}, msgFirstPass, 4, 5*time.Second)
	if err != nil || n != b || l.Term != 4 {
		t.Fatalf("got %+v from %v, %v; want term 4 from n2", l, n, err)
	}
	_, _, err = waitAnyJobLine(context.Background(), []*clusterNode{a, b}, msgFirstPass, 5, 30*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "a did not log") || !strings.Contains(err.Error(), "b did not log") {
		t.Errorf("no line for term 5: %v", err)
	}
}

func TestPollNewLeader_ThePeerThatNamesAnotherLeader(t *testing.T) {
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/cluster" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch polls.Add(1) {
		case 1:
			w.Write([]byte(`{"id":"n2","state":"follower","term":3,"leader_id":"n1"}`)) // still the old one
		case 2:
			w.Write([]byte(`{"id":"n2","state":"candidate","term":4,"leader_id":""}`))
		default:
			w.Write([]byte(`{"id":"n2","state":"follower","term":4,"leader_id":"n3"}`))
		}
	}))
	defer srv.Close()
	c := &benchCluster{adminToken: "tok", admin: newClient(time.Second)}
	n := &clusterNode{id: "n2", apiAddr: strings.TrimPrefix(srv.URL, "http://")}
	got := c.pollNewLeader(context.Background(), []*clusterNode{n}, "n1", 5*time.Second)
	if got.err != nil || got.id != "n3" || polls.Load() != 3 {
		t.Fatalf("pollNewLeader = %+v after %d polls", got, polls.Load())
	}
	c.adminToken = "wrong"
	if got := c.pollNewLeader(context.Background(), []*clusterNode{n}, "n1", 30*time.Millisecond); got.err == nil {
		t.Errorf("refused polls named %q", got.id)
	}
}
