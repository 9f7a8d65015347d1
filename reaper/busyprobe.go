package reaper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// busyProbes asks the apps' busy_urls for the job, never on the job's own
// path: a step that needs an answer starts one in the background and postpones
// the sleep; the answer, when it comes, makes the job look at the app again.
// One probe per app at a time, at most busyProbesMax at once, each bounded by
// BusyTimeout; a probe that cannot start (too many) is tried again at the next
// pass.
type busyProbes struct {
	client  *http.Client
	log     *slog.Logger
	sem     chan struct{}
	timeout time.Duration
	now     func() time.Time // the job's clock: answers are dated as its decisions are

	mu   sync.Mutex
	apps map[string]*busyProbe
}

// busyProbe is one app's answers, and whether a probe of it runs.
type busyProbe struct {
	answers BusyAnswers
	running bool
}

// BusyTimeout bounds one GET of a busy_url: a worker says at once whether it
// runs a job.
const BusyTimeout = 3 * time.Second

// busyProbesMax bounds the busy_urls asked at once, over every app.
const busyProbesMax = 8

// busyBodyMax is what is read of an answer's body, so that its connection can
// be used again; the body itself says nothing.
const busyBodyMax = 4 << 10

func newBusyProbes(log *slog.Logger, timeout time.Duration, now func() time.Time) *busyProbes {
	if timeout <= 0 {
		timeout = BusyTimeout
	}
	return &busyProbes{
		client: &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer of its own: "other status"
		}},
		log: log, sem: make(chan struct{}, busyProbesMax), timeout: timeout, now: now, apps: map[string]*busyProbe{},
	}
}

// answers returns the app's last answers.
func (b *busyProbes) answers(id string) BusyAnswers {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.apps[id]; p != nil {
		return p.answers
	}
	return BusyAnswers{}
}

// ask starts a probe of the app's url unless one runs or too many do; done is
// called with the app's id once its answer is kept. It never blocks.
func (b *busyProbes) ask(ctx context.Context, id, url string, done func(id string)) {
	b.mu.Lock()
	p := b.apps[id]
	if p == nil {
		p = &busyProbe{}
		b.apps[id] = p
	}
	if p.running {
		b.mu.Unlock()
		return
	}
	select {
	case b.sem <- struct{}{}:
	default:
		b.mu.Unlock()
		return // too many at once: the next pass asks again
	}
	p.running = true
	b.mu.Unlock()
	go func() {
		defer func() { <-b.sem }()
		answer, detail := b.get(ctx, url)
		if ctx.Err() != nil {
			b.mu.Lock()
			p.running = false
			b.mu.Unlock()
			return // the term ended: the next leader asks again
		}
		b.keep(id, url, p, answer, detail, b.now())
		done(id)
	}()
}

// get asks url once: busyYes, busyIdle or busyFailed, and what it answered.
func (b *busyProbes) get(ctx context.Context, url string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return busyFailed, "a bad URL"
	}
	req.Header.Set("User-Agent", "reaper-busy-check")
	resp, err := b.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return busyFailed, fmt.Sprintf("no answer within %s", b.timeout)
		}
		return busyFailed, "no answer: " + dialReason(err)
	}
	_, _ = io.CopyN(io.Discard, resp.Body, busyBodyMax)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return busyYes, "answered 200"
	case http.StatusNoContent, http.StatusNotFound:
		return busyIdle, fmt.Sprintf("answered %d", resp.StatusCode)
	}
	return busyFailed, fmt.Sprintf("answered %d", resp.StatusCode)
}

// dialReason is what an HTTP client error says, without the URL it names (its
// query may hold a token).
func dialReason(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

// keep records an answer, and logs it when its kind changed (once per change,
// not once per pass).
func (b *busyProbes) keep(id, url string, p *busyProbe, answer int, detail string, now time.Time) {
	b.mu.Lock()
	prev := p.answers
	next := BusyAnswers{Last: answer, At: now, Detail: detail}
	if answer == busyFailed {
		next.FailingSince = now
		if prev.Last == busyFailed {
			next.FailingSince = prev.FailingSince
		}
	}
	p.answers, p.running = next, false
	b.mu.Unlock()
	if prev.Last == answer {
		return
	}
	switch answer {
	case busyFailed:
		b.log.Warn("an app's busy_url fails; it is kept awake for at most its busy_max", "app", id, "busy_url", redactURL(url), "answer", detail)
	case busyYes:
		b.log.Info("an app's busy_url says it is busy; its sleep is postponed", "app", id, "busy_url", redactURL(url))
	default:
		if prev.Last != busyUnknown {
			b.log.Info("an app's busy_url says it is idle again", "app", id, "busy_url", redactURL(url), "answer", detail)
		}
	}
}

// forget drops the app's answers: the failures of a busy_url count in a row
// only while its app stays idle, so an app that slept, or had traffic, starts
// afresh.
func (b *busyProbes) forget(id string) {
	b.mu.Lock()
	delete(b.apps, id)
	b.mu.Unlock()
}

// busyGate applies the app's busy_url to Decide's verdict: a stop of an idle
// app with one goes ahead only when a fresh answer says it is idle (or it has
// failed for longer than busy_max); otherwise the record is kept as it was,
// noting why (Record.Busy), and the URL is asked when no fresh answer is at
// hand. An operator's "sleep now" is not put off. termCtx bounds the probe: it
// outlives the step, and ends with the term.
func (j *Job) busyGate(termCtx context.Context, t target, rec, next Record, act Action, now time.Time) (Record, Action) {
	next.Busy = nil
	url := t.policy.BusyURL
	if url == "" {
		return next, act
	}
	if act != ActionStop || rec.SleepAsk.Pending(rec) || rec.Status != StatusUp {
		j.busy.forget(t.app.ID)
		return next, act
	}
	postpone, ask, why := busyVerdict(j.busy.answers(t.app.ID), now, min(busyFresh, j.opts.FullInterval), t.policy.BusyMax)
	if ask {
		j.busy.ask(termCtx, t.app.ID, url, func(id string) { _ = j.Ask(termCtx, id) })
	}
	if !postpone {
		j.busy.forget(t.app.ID)
		return next, act
	}
	return busyPostponed(rec, next, why, now), ActionNone
}
