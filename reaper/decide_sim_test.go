package reaper

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas"
)

// dtPlatform models what Clever Cloud does with one app, timing traps included:
// after a stop it says SHOULD_BE_UP for a while; after a start it says
// SHOULD_BE_DOWN until the deployment begins, and a start may be lost; a
// deployment may fail or be cancelled; people start and stop apps from the console;
// apps crash; the platform may moderate an app.
type dtPlatform struct {
	rng             *rand.Rand
	state           paas.State
	dep             *paas.Deployment
	notShutdownable bool

	startPending bool      // a start was accepted and its deployment has not begun
	beginAt      time.Time // when it begins; zero: the start was lost
	endAt        time.Time // when the running deployment ends
	outcome      paas.DeploymentState
	stopPending  bool      // a stop was accepted; SHOULD_BE_UP lingers until downAt
	downAt       time.Time //
	moderatedTil time.Time // MODERATED until then
	before       paas.State
	exit         *paas.Exit // the app's last exit by itself (a crash)
	exited       bool       // the running deployment fails by the app exiting
}

func (pl *dtPlatform) dur(min, max time.Duration) time.Duration {
	return min + time.Duration(pl.rng.Int64N(int64(max-min)+1))
}

// begin starts a deployment at t, with a random outcome and length.
func (pl *dtPlatform) begin(t time.Time) {
	pl.state = paas.StateWantsToBeUp
	// The platform's clock may run a little behind ours.
	pl.dep = &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: t.Add(-pl.dur(0, DeploymentSlack-2*time.Second))}
	pl.exited = false
	pl.endAt = t.Add(pl.dur(10*time.Second, 5*time.Minute))
	switch n := pl.rng.IntN(20); {
	case n < 2:
		pl.outcome = paas.DeploymentFail
		pl.exited = pl.rng.IntN(2) == 0 // the app ran, and exited before it was ready
	case n < 4:
		pl.outcome = paas.DeploymentCancelled
	default:
		pl.outcome = paas.DeploymentOK
	}
}

// advance applies what happens on the platform until now.
func (pl *dtPlatform) advance(now time.Time) {
	if !pl.moderatedTil.IsZero() {
		if now.Before(pl.moderatedTil) {
			return
		}
		pl.state, pl.moderatedTil = pl.before, time.Time{}
	}
	if pl.stopPending && !now.Before(pl.downAt) {
		pl.stopPending, pl.state = false, paas.StateShouldBeDown
	}
	if pl.startPending && !pl.beginAt.IsZero() && !now.Before(pl.beginAt) {
		pl.startPending = false
		pl.begin(pl.beginAt)
	}
	if pl.dep != nil && pl.dep.State.InProgress() {
		if !now.Before(pl.endAt) {
			pl.dep.State = pl.outcome
			if pl.outcome == paas.DeploymentFail && pl.exited {
				pl.dep.Exited, pl.dep.Cause, pl.state = true, "exited with status 1 before it was ready", paas.StateShouldBeDown
			}
			switch {
			case pl.outcome == paas.DeploymentOK:
				pl.state = paas.StateShouldBeUp
			case pl.rng.IntN(2) == 0:
				pl.state = paas.StateShouldBeDown
			default: // WANTS_TO_BE_UP lingers after a failed start
			}
		} else if now.Sub(pl.dep.At) > 20*time.Second {
			pl.dep.State = paas.DeploymentTaskRunning
		}
	}
	if pl.state == paas.StateWantsToBeUp && (pl.dep == nil || !pl.dep.State.InProgress()) && pl.rng.IntN(10) == 0 {
		pl.state = paas.StateShouldBeDown // a failed start settles
	}
	if pl.state == paas.StateShouldBeDown && pl.dep != nil && !pl.dep.State.InProgress() {
		pl.stopPending = false // a start that failed under a stop: nothing is left to stop
	}
}

// outside is what people and the platform do on their own, at now.
func (pl *dtPlatform) outside(now time.Time) string {
	busy := pl.startPending || pl.stopPending || !pl.moderatedTil.IsZero() || (pl.dep != nil && pl.dep.State.InProgress())
	switch n := pl.rng.IntN(1000); {
	case busy:
	case n < 8 && pl.state == paas.StateShouldBeUp:
		pl.state = paas.StateShouldBeDown
		return "stopped from the console"
	case n < 40 && pl.state == paas.StateShouldBeUp:
		pl.state, pl.exit = paas.StateShouldBeDown, &paas.Exit{At: now, Status: "exited with status 3"}
		return "crashed"
	case n < 16 && pl.state == paas.StateShouldBeDown:
		pl.begin(now)
		return "started from the console"
	case n < 20 && pl.state == paas.StateShouldBeUp:
		pl.begin(now)
		return "redeployed from the console"
	case n < 22:
		pl.before, pl.state, pl.moderatedTil = pl.state, "MODERATED", now.Add(pl.dur(time.Minute, 10*time.Minute))
		return "moderated"
	case n < 30:
		pl.notShutdownable = !pl.notShutdownable
		return fmt.Sprintf("not shutdownable: %v", pl.notShutdownable)
	}
	return ""
}

func (pl *dtPlatform) start(now time.Time) {
	if pl.startPending && !pl.beginAt.IsZero() {
		return // the first start will begin; the platform keeps one
	}
	pl.startPending = true
	pl.beginAt = time.Time{}
	if pl.rng.IntN(10) != 0 { // one start in ten is lost
		pl.beginAt = now.Add(pl.dur(time.Second, 90*time.Second))
	}
}

func (pl *dtPlatform) stop(now time.Time) {
	if pl.state == paas.StateShouldBeDown {
		// Nothing runs (an operator's forced stop of an app stuck waking): the
		// stop changes nothing, but drops a start not begun yet.
		pl.startPending = false
		return
	}
	pl.stopPending, pl.downAt = true, now.Add(pl.dur(0, 2*time.Minute))
}

func (pl *dtPlatform) String() string {
	s := string(pl.state)
	if pl.dep != nil {
		s += fmt.Sprintf(" dep=%s@%s", pl.dep.State, pl.dep.At.Format("15:04:05"))
	}
	if pl.startPending {
		s += " start-pending"
	}
	if pl.stopPending {
		s += " stop-pending"
	}
	return s
}

// dtStats counts what the random runs went through, to prove they reach the
// situations the invariants are about.
type dtStats map[string]int

// dtSimulate runs one seeded sequence and returns the first broken invariant with
// the trace that led to it, or "".
func dtSimulate(seed uint64, steps int, stats dtStats) string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	paris, _ := time.LoadLocation("Europe/Paris")
	// Any moment of a year, DST changes included.
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
	p := Policy{GracePeriod: time.Duration(1+rng.IntN(30)) * time.Minute, FailTimeout: time.Duration(2+rng.IntN(15)) * time.Minute}
	if rng.IntN(3) == 0 {
		start := rng.IntN(24 * 60)
		p.MustBeUp = []Range{{Start: start, End: (start + 30 + rng.IntN(180)) % minutesPerDay, Location: paris}}
	}
	pl := &dtPlatform{rng: rng, state: paas.StateShouldBeUp}
	if rng.IntN(2) == 0 {
		pl.state = paas.StateShouldBeDown
	}
	rec := Record{AppID: "app_sim", Status: StatusWaitingForInit}
	var (
		lastAccess, connUntil, askedAt, heldSince time.Time
		asked, held                               bool
		episode, lastStart                        time.Time // WaitingForUp / WaitingForShutdown began; last start sent
		startFailed                               bool      // the platform refused the last start for now
		trace                                     []string
	)
	for step := range steps {
		// The clock: mostly fast ticks, sometimes a long silence.
		var dt time.Duration
		switch n := rng.IntN(100); {
		case n < 70:
			dt = time.Duration(1+rng.IntN(10)) * time.Second
		case n < 90:
			dt = time.Duration(10+rng.IntN(50)) * time.Second
		case n < 98:
			dt = time.Duration(1+rng.IntN(5)) * time.Minute
		default:
			dt = time.Duration(5+rng.IntN(35)) * time.Minute
		}
		prev := now
		now = now.Add(dt)
		// What people do happens at some moment since the last look; the platform
		// then moves on until now (a console start may be over by the next look).
		event := pl.outside(prev.Add(time.Duration(rng.Int64N(int64(dt))) + 1))
		pl.advance(now)

		// Traffic: a connection that ended starts the idle clock at its end.
		if !connUntil.IsZero() && !now.Before(connUntil) {
			lastAccess, connUntil = latest(lastAccess, connUntil), time.Time{}
		}
		inFlight := false
		if rng.IntN(100) < 25 {
			at := prev.Add(time.Duration(rng.Int64N(int64(dt))) + 1)
			lastAccess = latest(lastAccess, at)
			switch {
			case rec.Status.Asleep():
				if !asked {
					askedAt = at
				}
				asked = true
				if rng.IntN(2) == 0 && !held {
					held, heldSince = true, at
				}
			case rng.IntN(10) == 0 && connUntil.IsZero():
				connUntil = at.Add(time.Duration(1+rng.IntN(40)) * time.Minute) // a WebSocket, a download
			case rng.IntN(10) == 0:
				inFlight = true
			}
		}
		if asked && now.Sub(askedAt) >= 30*time.Minute {
			asked = false // wake asks expire
		}
		if held && now.Sub(heldSince) >= p.FailTimeout {
			held = false // answered 504
		}
		// An operator forces an app in Error, or stuck waking, to sleep.
		if (rec.Status == StatusError || rec.Status == StatusWaitingForUp) && rec.SleepAsk == nil && rng.IntN(30) == 0 {
			rec.SleepAsk = &SleepAsk{At: now, By: "ops", Force: true, From: rec.Status}
		}
		in := Input{
			Observation: paas.Observation{State: pl.state, NotShutdownable: pl.notShutdownable, Exit: pl.exit},
			LastAccess:  lastAccess,
			Busy:        held || inFlight || !connUntil.IsZero(),
			WakeAsked:   asked,
		}
		// What a group and depends_on say (group.go), now and then.
		if n := rng.IntN(100); n < 30 {
			in.Group = GroupInput{Keep: n < 8, Wake: n >= 8 && n < 12, Needed: n >= 12 && n < 16}
			if n >= 16 && n < 23 {
				in.Group.StopAfter = "worker"
			}
			if n >= 23 {
				in.Group.StartAfter = "api"
			}
		}
		// The job reads the deployment only when needed, or always (half the runs).
		if seed%2 == 0 || NeedsDeployment(rec, in.Observation.State, in, now, p) {
			if pl.dep != nil {
				d := *pl.dep
				in.Observation.Deployment = &d
			}
		}

		out, act := Decide(rec, in, now, p)
		line := fmt.Sprintf("step %d %s +%s platform[%s] busy=%v wake=%v access=-%s keepup=%v group=%+v | %s → %s %q act=%q",
			step, now.Format("2006-01-02 15:04:05"), dt, pl, in.Busy, in.WakeAsked, now.Sub(lastAccess).Round(time.Second),
			p.KeepUp(now), in.Group, rec.Status, out.Status, out.Cause, act)
		if event != "" {
			line += " (outside: " + event + ")"
		}
		trace = append(trace, line)

		bad := dtCheck(rec, in, p, now, out, act)
		if act == ActionStart && (pl.state != paas.StateShouldBeDown || pl.stopPending) {
			bad = append(bad, "start while the platform is up or stopping")
		}
		if act == ActionStop && pl.stopPending {
			bad = append(bad, "stop while a stop is pending")
		}
		// A WaitingForUp or WaitingForShutdown episode ends by the fail timeout, at
		// the latest on the first look after it. A start sent again keeps the
		// episode; passing through Down (LastDownAt = now) begins a new one.
		newEpisode := out.Status != rec.Status || (act == ActionStart && out.LastDownAt.Equal(now) && rec.Status != StatusDown)
		if out.Status == StatusWaitingForUp || out.Status == StatusWaitingForShutdown {
			if newEpisode {
				episode = now
			} else if now.Sub(episode) > p.FailTimeout+dt {
				bad = append(bad, fmt.Sprintf("%s for %s, past the fail timeout %s", out.Status, now.Sub(episode), p.FailTimeout))
			}
		}
		if out.Boots != nil && out.Boots.Count >= p.maxFailedBoots() && out.Status != StatusError && rec.Boots != out.Boots {
			bad = append(bad, fmt.Sprintf("%d failed boots in a row, and not in Error", out.Boots.Count))
		}
		// A start again after a failed boot counted since the last start.
		bootRetry := act == ActionStart && rec.Status == StatusWaitingForUp && out.Boots != nil && !out.Boots.At.Before(lastStart)
		if act == ActionStart {
			if !newEpisode && now.Sub(lastStart) < RestartAfter && !startFailed && !bootRetry {
				bad = append(bad, fmt.Sprintf("start sent again %s after the last one", now.Sub(lastStart)))
			}
			lastStart = now
		}
		if len(bad) > 0 {
			from := max(0, len(trace)-60)
			return fmt.Sprintf("seed %d, step %d: %s\ntrace:\n%s", seed, step, strings.Join(bad, "; "), strings.Join(trace[from:], "\n"))
		}

		// Count what happened, then apply the action and the job's bookkeeping.
		if out.Status != rec.Status {
			stats[string(rec.Status)+"→"+string(out.Status)]++
		}
		switch {
		case bootRetry:
			stats["start again after a failed boot"]++
		case act == ActionStart && !newEpisode:
			stats["start sent again"]++
		case act == ActionStop && rec.Status != StatusUp && rec.Status != StatusWaitingForShutdown:
			stats["forced stop from "+string(rec.Status)]++
		case act == ActionStart && rec.Status != StatusDown:
			stats["start chained after a stop"]++
		case act != ActionNone:
			stats[string(act)]++
		}
		if out.Status == StatusError && rec.Status != StatusError {
			stats["error: "+strings.SplitN(strings.SplitN(out.Cause, ":", 2)[0], ";", 2)[0]]++
		}
		if out.Boots != nil && (rec.Boots == nil || out.Boots.Count > rec.Boots.Count) && strings.Contains(out.Boots.Last, "came up") {
			stats["crash counted as a failed boot"]++
		}
		switch act {
		case ActionStart:
			// The job applies the platform's answer: mostly accepted, sometimes
			// a passing failure (the start is then sent again at the next look).
			if rng.IntN(10) == 0 {
				out, _ = afterStart(out, paas.ErrRateLimited, now)
				startFailed = true
				stats["start refused for now"]++
			} else {
				pl.start(now)
				out, _ = afterStart(out, nil, now)
				startFailed = false
			}
		case ActionStop:
			pl.stop(now)
			out.StopSentAt = now // the job records that the platform took it
		}
		rec = out
		switch rec.Status {
		case StatusUp:
			asked, held = false, false // served: held requests go through
		case StatusError:
			asked, held = false, false // answered 503
			if rng.IntN(20) == 0 {
				rec = Reset(rec, now) // an operator looks
				stats["reset"]++
			}
		}
	}
	return ""
}

func TestDecide_RandomSequences(t *testing.T) {
	seeds, steps := 200, 500
	if testing.Short() {
		seeds, steps = 40, 300
	}
	stats := dtStats{}
	for seed := range uint64(seeds) {
		if msg := dtSimulate(seed, steps, stats); msg != "" {
			t.Fatal(msg)
		}
	}
	// The runs must reach the situations the invariants are about.
	for _, k := range []string{
		"start", "stop", "start sent again", "start chained after a stop", "start refused for now",
		"Up→WaitingForShutdown", "WaitingForShutdown→Down", "Down→WaitingForUp", "WaitingForUp→Up",
		"WaitingForUp→Down", "Up→Down", "Down→Up", "Up→WaitingForUp", "WaitingForInit→Up", "WaitingForInit→Down",
		"error: the start failed", "error: did not wake up within the fail timeout",
		"error: unexpected platform state MODERATED", "reset",
		"start again after a failed boot", "crash counted as a failed boot", "forced stop from Error", "forced stop from WaitingForUp",
		"WaitingForUp→WaitingForShutdown", "Error→WaitingForShutdown",
	} {
		if stats[k] == 0 {
			t.Errorf("the random runs never reached %q (stats: %v)", k, stats)
		}
	}
	t.Logf("stats: %v", stats)
}
