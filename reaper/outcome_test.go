package reaper

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

func TestAfterStart(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(2 * time.Second)
	next := Record{AppID: "a", Status: StatusWaitingForUp, Cause: CauseWakeAsked, ActionAt: t0, StartSentAt: t0, LastCheckAt: t0}
	tests := []struct {
		name       string
		err        error
		wantStatus Status
		wantCause  string
		wantRetry  bool
		wantServed bool
	}{
		{"accepted", nil, StatusWaitingForUp, CauseWakeAsked, false, true},
		{"never deployed", fmt.Errorf("clevercloud: %w", paas.ErrNeverDeployed), StatusError, "the app was never deployed: it cannot be started", false, true},
		{"start failed", fmt.Errorf("process: %w: exit 1", paas.ErrStartFailed), StatusError, "the start failed: process: " + paas.ErrStartFailed.Error() + ": exit 1", false, true},
		{"not found", paas.ErrNotFound, StatusError, "the start failed: " + paas.ErrNotFound.Error(), false, true},
		{"credential refused", paas.ErrAuth, StatusError, "the start failed: " + paas.ErrAuth.Error(), false, true},
		{"rate limited", paas.ErrRateLimited, StatusWaitingForUp, CauseWakeAsked, true, false},
		{"busy app", paas.ErrBusy, StatusWaitingForUp, CauseWakeAsked, true, false},
		{"unknown failure", errors.New("connection reset"), StatusWaitingForUp, CauseWakeAsked, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, served := afterStart(next, tc.err, now)
			if got.Status != tc.wantStatus || got.Cause != tc.wantCause || got.RetryStart != tc.wantRetry || served != tc.wantServed {
				t.Fatalf("afterStart = %s %q retry %v served %v, want %s %q retry %v served %v",
					got.Status, got.Cause, got.RetryStart, served, tc.wantStatus, tc.wantCause, tc.wantRetry, tc.wantServed)
			}
			if tc.err == nil && got != next {
				t.Errorf("an accepted start changed the record: %+v", got)
			}
			if got.Status == StatusError {
				if got.ErrorCause != got.Cause || !got.LastStatusUpdate.Equal(now) || !got.LastCheckAt.Equal(now) {
					t.Errorf("Error record: error cause %q, last update %v, last check %v; want the cause and %v", got.ErrorCause, got.LastStatusUpdate, got.LastCheckAt, now)
				}
				if !got.ActionAt.Equal(t0) {
					t.Errorf("ActionAt = %v, want the start's %v", got.ActionAt, t0)
				}
			}
		})
	}
}

func TestAfterStop(t *testing.T) {
	upSince := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	upAction := upSince.Add(-time.Minute) // the action that woke it
	decided := upSince.Add(time.Hour)
	now := decided.Add(3 * time.Second)
	next := Record{AppID: "a", Status: StatusWaitingForShutdown, Cause: "idle for 1h0m0s", ActionAt: decided, LastUpAt: upSince, LastStatusUpdate: decided}
	tests := []struct {
		name       string
		err        error
		wantStatus Status
		wantCause  string
	}{
		{"accepted", nil, StatusWaitingForShutdown, "idle for 1h0m0s"},
		{"must not be stopped", paas.ErrNotShutdownable, StatusUp, CauseNotShutdownable},
		{"rate limited", paas.ErrRateLimited, StatusUp, "the stop failed: " + paas.ErrRateLimited.Error()},
		{"busy app", paas.ErrBusy, StatusUp, "the stop failed: " + paas.ErrBusy.Error()},
		{"credential refused", paas.ErrAuth, StatusError, "the stop failed: " + paas.ErrAuth.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := afterStop(next, upAction, tc.err, now)
			if got.Status != tc.wantStatus || got.Cause != tc.wantCause {
				t.Fatalf("afterStop = %s %q, want %s %q", got.Status, got.Cause, tc.wantStatus, tc.wantCause)
			}
			switch got.Status {
			case StatusWaitingForShutdown:
				if !got.StopSentAt.Equal(now) || !got.ActionAt.Equal(decided) {
					t.Errorf("stop sent at %v, action at %v; want %v and %v", got.StopSentAt, got.ActionAt, now, decided)
				}
			case StatusUp:
				// It never stopped: its grace period is not renewed, and the
				// stop's action time goes.
				if !got.LastUpAt.Equal(upSince) || !got.ActionAt.Equal(upAction) || !got.LastStatusUpdate.Equal(now) || got.ErrorCause != "" {
					t.Errorf("back in Up: LastUpAt %v ActionAt %v LastStatusUpdate %v ErrorCause %q", got.LastUpAt, got.ActionAt, got.LastStatusUpdate, got.ErrorCause)
				}
			case StatusError:
				if got.ErrorCause != got.Cause || !got.LastCheckAt.Equal(now) {
					t.Errorf("Error record: error cause %q, last check %v", got.ErrorCause, got.LastCheckAt)
				}
			}
		})
	}
}

func TestStopWithdrawn_KeepsTheAppUpWithItsClock(t *testing.T) {
	upSince := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	decided := upSince.Add(time.Hour)
	now := decided.Add(2 * time.Second)
	next := Record{AppID: "a", Status: StatusWaitingForShutdown, ActionAt: decided, LastUpAt: upSince}
	got := stopWithdrawn(next, upSince, now)
	want := next
	want.Status, want.Cause, want.ActionAt, want.LastStatusUpdate = StatusUp, CauseRequestWhileStopping, upSince, now
	if got != want {
		t.Errorf("stopWithdrawn =\n%+v, want\n%+v", got, want)
	}
}

func TestWithheld_OnlyTheLookIsRecorded(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	rec := Record{AppID: "a", Status: StatusUp, Cause: "woke up", LastUpAt: t0, Term: 2, Revision: 7}
	next, act := Decide(rec, Input{Observation: paas.Observation{State: paas.StateShouldBeUp}}, t0.Add(2*time.Hour), Policy{GracePeriod: time.Hour, FailTimeout: time.Minute})
	if act != ActionStop {
		t.Fatalf("the test needs a stop decision, got %q", act)
	}
	next.Term = 3
	got := withheld(rec, next)
	want := rec
	want.LastCheckAt, want.PlatformState, want.Term = t0.Add(2*time.Hour), paas.StateShouldBeUp, 3
	if got != want {
		t.Errorf("withheld =\n%+v, want\n%+v", got, want)
	}
}

func TestAfterObserveError(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, st := range Statuses {
		rec := Record{AppID: "a", Status: st}
		gone := &paas.CauseError{Cause: "Deployment shop/web was deleted", Err: fmt.Errorf("kubernetes: %w", paas.ErrNotFound)}
		for _, err := range []error{paas.ErrNotFound, fmt.Errorf("clevercloud: %w", paas.ErrNotFound), fmt.Errorf("observe: %w", gone), paas.ErrRateLimited, errors.New("timeout")} {
			got, changed := afterObserveError(rec, err, now)
			wantChange := errors.Is(err, paas.ErrNotFound) && st != StatusError
			if changed != wantChange {
				t.Errorf("%s, %v: changed %v, want %v", st, err, changed, wantChange)
				continue
			}
			if !changed {
				if got != rec {
					t.Errorf("%s, %v: the record changed although nothing did: %+v", st, err, got)
				}
				continue
			}
			if got.Status != StatusError || got.ErrorCause == "" || !got.LastStatusUpdate.Equal(now) {
				t.Errorf("%s, %v: %s %q at %v; want Error with a cause, now", st, err, got.Status, got.ErrorCause, got.LastStatusUpdate)
			}
			if own := errors.Is(err, gone); own != (got.ErrorCause == gone.Cause) {
				t.Errorf("%s, %v: cause %q; the driver's own cause %q is used only when the error carries it", st, err, got.ErrorCause, gone.Cause)
			}
		}
	}
}
