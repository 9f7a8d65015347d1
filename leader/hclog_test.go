package leader

import (
	"fmt"
	"github.com/reapergw/reaper/internal/logtest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogger_ForwardsLevelsAndPairs(t *testing.T) {
	buf := &logtest.Buffer{}
	l := newHCLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")

	l.Debug("hidden", "k", 1)
	l.Trace("hidden too")
	l.Log(hclog.Off, "never")
	l.Info("entering leader state", "term", 7)
	l.Named("transport").With("peer", "n2").Warn("failed to heartbeat", "error", "EOF")
	l.Error("initial configuration", "servers", hclog.Fmt("%+v", []string{"n1", "n2"}))

	out := buf.String()
	for _, bad := range []string{"hidden", "never"} {
		if strings.Contains(out, bad) {
			t.Errorf("logged a line below the handler's level: %s", out)
		}
	}
	for _, want := range []string{
		`level=INFO msg="entering leader state" logger=raft term=7`,
		`level=WARN msg="failed to heartbeat" logger=raft.transport peer=n2 error=EOF`,
		`level=ERROR msg="initial configuration" logger=raft servers="[n1 n2]"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if l.IsDebug() || !l.IsInfo() || l.GetLevel() != hclog.Info {
		t.Errorf("IsDebug=%v IsInfo=%v GetLevel=%v for an Info handler", l.IsDebug(), l.IsInfo(), l.GetLevel())
	}
	if n := l.Named("x").ResetNamed("y"); n.Name() != "y" {
		t.Errorf("ResetNamed name = %q", n.Name())
	}
	if got := l.With("a", 1).ImpliedArgs(); len(got) != 2 {
		t.Errorf("ImpliedArgs = %v", got)
	}
	l.StandardLogger(nil).Print("from the standard logger")
	if !strings.Contains(buf.String(), "from the standard logger") {
		t.Error("StandardLogger output lost")
	}
}

func TestFormatArgs_LeavesCallerSliceAlone(t *testing.T) {
	args := []any{"servers", hclog.Fmt("%d", 3)}
	out := formatArgs(args)
	if out[1] != "3" {
		t.Fatalf("formatted %v", out[1])
	}
	if _, ok := args[1].(hclog.Format); !ok {
		t.Fatal("caller's slice modified")
	}
}

func TestRepeatFilter_DropsRepeatsWithinTheWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &repeatFilter{}
	for i, step := range []struct {
		key         string
		at          time.Duration
		wantAllowed bool
		wantDropped int
	}{
		{"a", 0, true, 0},
		{"a", time.Second, false, 0},
		{"b", time.Second, true, 0}, // another peer or message is not a repeat
		{"a", 5 * time.Second, false, 0},
		{"a", repeatWindow, true, 2}, // the window has passed: logged, with the count of dropped repeats
		{"a", repeatWindow + time.Second, false, 0},
		{"a", 3 * repeatWindow, true, 1},
		{"a", 5 * repeatWindow, true, 0},
	} {
		allowed, dropped := f.allow(step.key, t0.Add(step.at))
		if allowed != step.wantAllowed || dropped != step.wantDropped {
			t.Errorf("step %d (%s at %s) = %v, %d; want %v, %d", i, step.key, step.at, allowed, dropped, step.wantAllowed, step.wantDropped)
		}
	}
}

func TestHCLogger_SuppressesRepeatedErrorsPerPeer(t *testing.T) {
	buf := &logtest.Buffer{}
	l := newHCLogger(buf.Logger(slog.LevelInfo), "raft")
	for range 5 {
		l.Error("failed to heartbeat to", "peer", "127.0.0.1:7002", "error", "EOF")
		l.Error("failed to heartbeat to", "peer", "127.0.0.1:7003", "error", "EOF")
		l.Info("entering follower state")
	}
	out := buf.String()
	if n := strings.Count(out, "peer=127.0.0.1:7002"); n != 1 {
		t.Errorf("repeated error about one peer logged %d times, want 1", n)
	}
	if n := strings.Count(out, "peer=127.0.0.1:7003"); n != 1 {
		t.Errorf("error about another peer logged %d times, want 1", n)
	}
	if n := strings.Count(out, "entering follower state"); n != 5 {
		t.Errorf("info lines are not filtered: %d, want 5", n)
	}
}

func TestFormatArgs_RenamesKeysThatClashWithSlog(t *testing.T) {
	got := formatArgs([]any{"time", 250, "peer", "n2", "level", "x", "msg", "y"})
	want := []any{"raft_time", 250, "peer", "n2", "raft_level", "x", "raft_msg", "y"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("formatArgs = %v, want %v", got, want)
	}
}
