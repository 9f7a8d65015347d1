package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
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

// watchedProcess is a process whose log the test writes, a line at a time, to the
// pipe it returns.
func watchedProcess(t *testing.T, name string) (*clusterenv.Process, *io.PipeWriter) {
	p := &clusterenv.Process{Name: name, Log: clusterenv.NewLogWatch()}
	pr, pw := io.Pipe()
	go p.Log.ReadLines(pr)
	t.Cleanup(func() { pw.Close() })
	return p, pw
}

func TestWaitAnyJobLine_FirstNodeToLogIt(t *testing.T) {
	pa, wa := watchedProcess(t, "a")
	pb, wb := watchedProcess(t, "b")
	a := &clusterenv.Node{ID: "n1", P: pa}
	b := &clusterenv.Node{ID: "n2", P: pb}
	at := time.Now()
	io.WriteString(wa, jobLogLine(t, at, msgFirstPass, "term", 3)+"\n") // the old term: not this one
	go io.WriteString(wb, jobLogLine(t, at, msgFirstPass, "term", 4)+"\n")
	l, n, err := waitAnyJobLine(context.Background(), []*clusterenv.Node{a, b}, msgFirstPass, 4, 5*time.Second)
	if err != nil || n != b || l.Term != 4 {
		t.Fatalf("got %+v from %v, %v; want term 4 from n2", l, n, err)
	}
	_, _, err = waitAnyJobLine(context.Background(), []*clusterenv.Node{a, b}, msgFirstPass, 5, 30*time.Millisecond)
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
	n := &clusterenv.Node{ID: "n2", APIAddr: strings.TrimPrefix(srv.URL, "http://")}
	c := &benchCluster{Cluster: clusterenv.New("reaper", "tok", &clusterenv.Cleanups{}, []*clusterenv.Node{n})}
	got := c.pollNewLeader(context.Background(), []*clusterenv.Node{n}, "n1", 5*time.Second)
	if got.err != nil || got.id != "n3" || polls.Load() != 3 {
		t.Fatalf("pollNewLeader = %+v after %d polls", got, polls.Load())
	}
	c.AdminToken = "wrong"
	if got := c.pollNewLeader(context.Background(), []*clusterenv.Node{n}, "n1", 30*time.Millisecond); got.err == nil {
		t.Errorf("refused polls named %q", got.id)
	}
}
