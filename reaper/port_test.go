package reaper

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// claim claims app for a transport's route, as package tcproute does.
func (e *env) claim(cfg Config) *Route {
	e.t.Helper()
	var errs conf.Errors
	cfg.Validate("tcp_routes[0]", &errs)
	if err := errs.Err(); err != nil {
		e.t.Fatal(err)
	}
	return e.engine.Claim("tcp-"+cfg.AppID, "TCP "+cfg.AppID, &cfg)
}

func TestPort_ABurstOfHoldsStartsTheAppOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("db"), "")
		r := e.claim(config("db"))
		e.start()
		defer e.stop()
		settle()
		if st := r.Status(); st != StatusDown {
			t.Fatalf("status = %s, want Down", st)
		}
		if m := e.engine.Managed(); len(m) != 1 || m[0].Routes[0] != "tcp-db" {
			t.Fatalf("managed = %+v: the transport's route does not manage the app", m)
		}
		const n = 20
		errs := make(chan error, n)
		for range n {
			go func() {
				done, err := r.Hold(context.Background(), time.Now().Add(time.Minute))
				done(err == nil)
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("hold: %v", err)
			}
		}
		if got := e.fake.Count("start", "db"); got != 1 {
			t.Errorf("starts = %d, want 1", got)
		}
		if r.Status() != StatusUp {
			t.Errorf("status = %s", r.Status())
		}
	})
}

func TestPort_AnOpenConnectionKeepsTheAppAwake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("db"), "")
		r := e.claim(config("db", func(c *Config) { c.GracePeriod = conf.Duration(time.Minute) }))
		e.start()
		defer e.stop()
		settle()
		done, err := r.Hold(context.Background(), time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		end, ok := r.Begin()
		done(ok)
		if !ok {
			t.Fatal("Begin on an awake app said it sleeps")
		}
		if _, inFlight := e.engine.Held("db"); inFlight != 1 {
			t.Errorf("in flight = %d with a connection open, want 1 (the admin API's in_flight)", inFlight)
		}
		time.Sleep(10 * time.Minute) // a quiet connection, open for ten grace periods
		if e.fake.Count("stop", "db") != 0 || r.Status() != StatusUp {
			t.Fatalf("stopped under an open connection (status %s)", r.Status())
		}
		end() // the connection closes: the idle clock starts now
		time.Sleep(61 * time.Second)
		settle()
		time.Sleep(31 * time.Second) // the job's next full pass
		settle()
		if e.fake.Count("stop", "db") != 1 {
			t.Errorf("stops = %d one grace period after the connection closed, want 1 (status %s)", e.fake.Count("stop", "db"), r.Status())
		}
	})
}

func TestPort_HoldAnswersWhyTheAppIsNotUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("slow", "broken")
		fake.Manual = true
		e := newEnv(t, fake, "")
		slow := e.claim(config("slow", func(c *Config) { c.MaxHeld = 1 }))
		e.start()
		defer e.stop()
		settle()

		// The one place of max_held is taken; the next caller is refused.
		first := make(chan error, 1)
		ctx, leave := context.WithCancel(context.Background())
		go func() {
			_, err := slow.Hold(ctx, time.Now().Add(time.Minute))
			first <- err
		}()
		settle()
		if held, _ := e.engine.Held("slow"); held != 1 {
			t.Errorf("held = %d with a connection held, want 1 (the admin API's held)", held)
		}
		if _, err := slow.Hold(context.Background(), time.Now().Add(time.Minute)); !errors.Is(err, ErrTooManyHeld) {
			t.Errorf("second hold: %v, want ErrTooManyHeld", err)
		}
		leave() // the caller gives up: its place is free at once
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Errorf("the caller that left got %v", err)
		}
		if n := slow.a.held.Load(); n != 0 {
			t.Errorf("held = %d after the caller left", n)
		}
		begin := time.Now()
		if _, err := slow.Hold(context.Background(), begin.Add(30*time.Second)); !errors.Is(err, ErrHoldTimeout) || time.Since(begin) != 30*time.Second {
			t.Errorf("hold past its deadline: %v after %v, want ErrHoldTimeout after 30s", err, time.Since(begin))
		}
		e.engine.Shutdown()
		if _, err := slow.Hold(context.Background(), time.Now().Add(time.Minute)); !errors.Is(err, ErrShuttingDown) {
			t.Errorf("hold on a node shutting down: %v", err)
		}
	})
}

func TestPort_HoldOfAnAppThatFailsToStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("db")
		fake.FailNext("start", paas.ErrStartFailed)
		e := newEnv(t, fake, "")
		r := e.claim(config("db"))
		e.start()
		defer e.stop()
		settle()
		if _, err := r.Hold(context.Background(), time.Now().Add(time.Minute)); !errors.Is(err, ErrAppFailed) {
			t.Errorf("hold: %v, want ErrAppFailed", err)
		}
	})
}

func TestPort_ARefusedConnectionWakesAnAppThatStoppedBehindReapersBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("db")
		e := newEnv(t, fake, "")
		r := e.claim(config("db"))
		e.start()
		defer e.stop()
		settle()
		if _, err := r.Hold(context.Background(), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		// The job's passes of the wake are over; then the app crashes, and
		// reaper still believes it up.
		settle()
		fake.SetQuietly("db", paastest.App{State: paas.StateShouldBeDown})
		// Refused reports whether the app is seen asleep; the fake starts it
		// again at once, so it may already be back up: the caller dials again.
		if asleep := r.Refused(context.Background()); asleep {
			if _, err := r.Hold(context.Background(), time.Now().Add(time.Minute)); err != nil {
				t.Fatalf("hold again: %v", err)
			}
		}
		settle()
		if got := fake.Count("start", "db"); got != 2 || r.Status() != StatusUp {
			t.Errorf("starts = %d, status %s; want 2 (woken again by the refused dial) and Up", got, r.Status())
		}
	})
}

func TestPort_AnsweredEndsTheWakesPhasesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("db"), "")
		r := e.claim(config("db"))
		e.start()
		defer e.stop()
		settle()
		if _, err := r.Hold(context.Background(), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond) // the dial after the release
		r.Answered()
		r.Answered() // a second connection of the same wake
		recent, _, cancel := e.engine.events.subscribe(0)
		cancel()
		n := 0
		for _, ev := range recent {
			if ev.Kind == EventWake && ev.Phases != nil && !ev.Phases.FirstAnswerAt.IsZero() {
				n++
				if d := ev.Phases.FirstAnswerAt.Sub(ev.Phases.UpAt); d != 40*time.Millisecond {
					t.Errorf("first_answer phase = %v, want the 40ms from up to the dial", d)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d wake events with a first answer, want 1: %+v", n, recent)
		}
	})
}

// StartHold holds a caller off its goroutine (a parked HTTP request): its done
// gets how the hold ended and the record it ended on, from which HTTP decides
// its 503; a cancelled hold frees its place and never calls done.
func TestPort_StartHoldEndsWithItsRecordOrIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("db")
		fake.FailNext("start", paas.ErrStartFailed)
		e := newEnv(t, fake, "")
		r := e.claim(config("db"))
		e.start()
		defer e.stop()
		settle()

		called := make(chan HoldEnd, 1)
		cancel, _, started := r.StartHold(time.Now().Add(time.Minute), func(end HoldEnd) { called <- end })
		if !started {
			t.Fatal("a hold on an app that is down ended at once")
		}
		if !cancel() {
			t.Fatal("cancel of a pending hold said it had ended")
		}
		if n := r.a.held.Load(); n != 0 {
			t.Errorf("held = %d after the hold was cancelled", n)
		}

		ends := make(chan HoldEnd, 1)
		if _, _, started := r.StartHold(time.Now().Add(time.Minute), func(end HoldEnd) { ends <- end }); !started {
			t.Fatal("a hold on an app that is down ended at once")
		}
		r.AskWake()
		end := <-ends
		if !errors.Is(end.Err, ErrAppFailed) || end.Released || end.Rec == nil || end.Rec.Status != StatusError || !end.Waited() {
			t.Errorf("end = %+v (record %+v), want ErrAppFailed on the record in Error, waited", end, end.Rec)
		}
		settle()
		select {
		case end := <-called:
			t.Errorf("the cancelled hold's done was called: %+v", end)
		default:
		}
	})
}

// A crashed app that the job restarts fast goes Up, WaitingForUp, Up again; the
// request whose connection was refused may read the record only after the last
// change. It must see a restart there (and dial again), not an app that stayed
// up refusing connections (the 502 after recheckWait that made
// TestHold_ARequestRefusedByACrashedAppIsParkedThenSentAgain flaky under load).
func TestPort_ARefusedConnectionSeesARestartItsWaiterReadsOnlyOnceOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, paastest.New("db"), "")
		r := e.claim(config("db"))
		a := e.engine.app("db")
		t0 := time.Now()
		a.rec.Store(&Record{AppID: "db", Status: StatusUp, LastUpAt: t0, LastStatusUpdate: t0})
		got := make(chan bool, 1)
		go func() { got <- r.Refused(context.Background()) }()
		synctest.Wait() // the waiter holds the record it was refused under
		// Both changes land before the waiter runs again.
		a.rec.Store(&Record{AppID: "db", Status: StatusWaitingForUp, LastUpAt: t0, LastStatusUpdate: t0.Add(time.Millisecond)})
		t1 := t0.Add(2 * time.Millisecond)
		a.rec.Store(&Record{AppID: "db", Status: StatusUp, LastUpAt: t1, LastStatusUpdate: t1})
		a.notifyMu.Lock()
		close(a.notify)
		a.notify = make(chan struct{})
		a.notifyMu.Unlock()
		synctest.Wait()
		select {
		case again := <-got:
			if !again {
				t.Error("Refused = false for an app that came up again since; want true (hold, then dial again)")
			}
		default:
			t.Errorf("Refused still waits after the app came up again; after %v it answers %v", recheckWait, <-got)
		}
	})
}

// downSince decides, from the record a connection was refused under and the
// record now, whether the app went down since (then the request is held or sent
// again) or stayed up (then the 502).
func TestDownSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up := &Record{Status: StatusUp, LastUpAt: t0}
	for _, c := range []struct {
		name      string
		from, cur *Record
		want      bool
	}{
		{"still the same up", up, up, false},
		{"up, its record rewritten", up, &Record{Status: StatusUp, LastUpAt: t0, LastCheckAt: t0.Add(time.Second)}, false},
		{"down", up, &Record{Status: StatusDown, LastUpAt: t0}, true},
		{"waking", up, &Record{Status: StatusWaitingForUp, LastUpAt: t0}, true},
		{"stopping", up, &Record{Status: StatusWaitingForShutdown, LastUpAt: t0}, true},
		{"up again since", up, &Record{Status: StatusUp, LastUpAt: t0.Add(time.Second)}, true},
		{"in error", up, &Record{Status: StatusError, LastUpAt: t0}, false},
		{"never observed", nil, nil, false},
		{"first observed up", nil, up, false},
		{"first observed down", nil, &Record{Status: StatusDown}, true},
	} {
		if got := downSince(c.from, c.cur); got != c.want {
			t.Errorf("%s: downSince = %v, want %v", c.name, got, c.want)
		}
	}
}
