// Package probe tells when a started app can take requests: one readiness probe
// (a TCP connect, an HTTP GET answered below 500, or a question in the app's own
// protocol: a Postgres startup message, a Redis PING), and the schedule that
// repeats it while the app starts (every 2 ms in its first second, then less and
// less often up to a steady interval). The process and docker drivers share it.
package probe

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Bounds of one readiness probe. Apps usually listen on loopback, where a connect is
// accepted or refused at once; the bounds matter for an app that accepts but hangs.
const (
	tcpProbeTimeout  = time.Second
	httpProbeTimeout = 2 * time.Second
)

// Prober runs readiness probes. One is shared by all apps of a driver; it is safe
// for concurrent use.
type Prober struct {
	dialer net.Dialer
	client *http.Client
	log    *slog.Logger

	mu   sync.Mutex
	told map[string]string // probe target → the last problem logged for it
}

// New returns a Prober that logs to log (nil: nowhere) what a probe finds wrong
// with its own configuration (a redis server that wants a password), once per
// target until the problem changes.
func New(log *slog.Logger) *Prober {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Prober{dialer: net.Dialer{Timeout: tcpProbeTimeout}, log: log, told: map[string]string{}}
	p.client = &http.Client{
		Transport: &http.Transport{
			// No proxy: reaper's environment may name one, and a probe must reach
			// the app itself.
			Proxy:       nil,
			DialContext: p.dialer.DialContext,
			// A kept-alive connection would stay open on the app after it is
			// ready, for nothing.
			DisableKeepAlives:     true,
			TLSHandshakeTimeout:   httpProbeTimeout,
			ResponseHeaderTimeout: httpProbeTimeout,
		},
		Timeout: httpProbeTimeout,
		// A redirect is an answer: the app is serving.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// Result is what one readiness probe found.
type Result int

const (
	// Unreached: nothing accepted the connection (the port is closed). The
	// kernel answered, the app spent nothing on it.
	Unreached Result = iota
	// NotReady: the app accepted the connection but is not ready (an HTTP
	// probe answered 500 or more, or not at all). The app spent a request on it.
	NotReady
	// Ready: the app is ready.
	Ready
	// Starting: the app answered, in its own protocol, that it is starting
	// (Postgres's 57P03, Redis's -LOADING): not ready, and probed again on the
	// fast schedule, since it said so at once and will be ready any moment.
	Starting
)

// Ready probes once and reports whether the app is ready.
func (p *Prober) Ready(ctx context.Context, c *Config) bool {
	return p.Probe(ctx, c) == Ready
}

// Probe probes once as c says. It blocks for at most the probe's timeout or until
// ctx ends.
func (p *Prober) Probe(ctx context.Context, c *Config) Result {
	res, _ := p.Check(ctx, c)
	return res
}

// Check probes once as c says and returns what it found with the reason when the
// app is not ready: the connect's error when Unreached (see Refused), or what the
// app answered. A problem of the probe's own configuration (ErrNoAuth, a refused
// AUTH) is logged, once per target until it changes. It blocks for at most the
// probe's timeout or until ctx ends.
func (p *Prober) Check(ctx context.Context, c *Config) (Result, error) {
	var (
		res Result
		err error
	)
	switch {
	case c.TCP != "":
		return p.TCP(ctx, c.TCP)
	case c.HTTP != "":
		return p.http(ctx, c.HTTP), nil
	case c.Postgres != "":
		res, err = p.postgres(ctx, c.Postgres, c.Username)
	case c.Redis != "":
		res, err = p.redis(ctx, c.Redis, c.Username, c.Password)
	default:
		return Unreached, errors.New("probe: no probe configured")
	}
	var auth errAuth
	if errors.Is(err, ErrNoAuth) || errors.As(err, &auth) {
		p.tell(c.Kind()+" "+c.Addr(), err.Error())
	}
	return res, err
}

// tell logs a problem of a probe's configuration once per target until it
// changes: the probe runs every few milliseconds.
func (p *Prober) tell(target, problem string) {
	p.mu.Lock()
	same := p.told[target] == problem
	p.told[target] = problem
	p.mu.Unlock()
	if !same {
		p.log.Warn("the readiness probe cannot tell whether the app is ready", "probe", target, "problem", problem)
	}
}

// http probes with a GET of url: Ready when answered below 500.
func (p *Prober) http(ctx context.Context, url string) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Unreached
	}
	req.Header.Set("User-Agent", "reaper-readiness-probe")
	resp, err := p.client.Do(req)
	if err != nil {
		if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
			return Unreached
		}
		return NotReady // connected, then no answer (or a broken one)
	}
	// The body is not read: the status is the answer, and the connection is not
	// reused.
	_ = resp.Body.Close()
	if resp.StatusCode < 500 {
		return Ready
	}
	return NotReady
}

// TCP probes addr once with a TCP connect: Ready when it is accepted, else
// Unreached and the connect's error, so that a caller can tell a port that is
// closed (Refused: the host answered) from an address that cannot be reached
// at all (no route, or no answer within the probe timeout). It blocks for at
// most the probe timeout or until ctx ends.
func (p *Prober) TCP(ctx context.Context, addr string) (Result, error) {
	conn, err := p.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Unreached, err
	}
	_ = conn.Close()
	return Ready, nil
}

// Refused reports whether a connect's error says that the host answered and
// nothing listens on the port: the address is reachable.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// Close releases the probe client's resources.
func (p *Prober) Close() {
	p.client.CloseIdleConnections()
}

// The readiness schedule of a starting app: a probe every fastProbeInterval for
// the first fastProbePhase after the start, where most apps open their port, then
// an interval twice as long every further probeBackoffStep, up to the steady
// interval (ready.interval, default DefaultInterval).
//
// The cost: a TCP probe of a closed port on loopback is a connect() that the
// kernel refuses at once, so the app spends nothing on it; reaper spends about
// 0.1 ms of CPU per probe at 2 ms, and about 0.4 ms at 25 ms, where each probe
// wakes an idle runtime. For an app that takes 60 s to open its port, with the
// default steady interval of 25 ms: 500 probes in the first second, about 660 while
// the interval grows to 25 ms (by 4.6 s), then 40 a second, about 3,400 probes in
// all against 2,400 at a fixed 25 ms. Measured on a 2-CPU VM, reaper's CPU over the
// 60 s went from about 0.95 s to 1.1 s: 5% of a CPU in the first second (1%
// before), 3% in the next four, then 1.6% as before. Whatever the steady
// interval, the fast start and the backoff add at most about 1,250 probes per
// start (500, then at most 1/(2 ms·ln 2) ≈ 720).
const (
	fastProbeInterval = 2 * time.Millisecond
	fastProbePhase    = time.Second
	probeBackoffStep  = time.Second
)

// Interval is the wait before the next probe of an app that started
// sinceStart ago and is not ready, with steady as its configured interval. Pure: a
// function of its arguments only. It never exceeds steady.
func Interval(sinceStart, steady time.Duration) time.Duration {
	over := sinceStart - fastProbePhase
	if over <= 0 {
		return min(fastProbeInterval, steady)
	}
	iv := float64(fastProbeInterval) * math.Exp2(float64(over)/float64(probeBackoffStep))
	if iv >= float64(steady) { // +Inf included, after days
		return steady
	}
	return time.Duration(iv)
}

// Loop probes until the app is ready (true) or ctx ends (false). After a probe
// that nothing answered it waits as Interval says for the time since
// started; after one the app answered without being ready (an HTTP probe's 5xx),
// at least the steady interval, so that a booting app is not sent hundreds of
// requests a second. An app that said in its own protocol that it is starting
// (Starting) keeps the fast schedule: it refused at once, and a wake waits on
// the moment it is ready. While gate (nil: never) is paused it sends no probe; once
// resumed it probes at once, on the schedule of a start made then.
func Loop(ctx context.Context, started time.Time, steady time.Duration, gate *Gate, probe func(context.Context) Result) bool {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		if resumed := gate.paused(); resumed != nil {
			select {
			case <-ctx.Done():
				return false
			case <-resumed:
				started = time.Now()
			}
		}
		res := probe(ctx)
		if res == Ready {
			return true
		}
		wait := Interval(time.Since(started), steady)
		if res == NotReady {
			wait = max(wait, steady)
		}
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		case <-gate.pausedCh():
		}
	}
}

// Gate pauses the probes of a Loop, for an app that nobody waits for any more
// (reaper put it in Error: see paas.ReadinessWaiter), and resumes them. The
// zero value is open; a nil Gate is never paused. Safe for concurrent use.
type Gate struct {
	mu      sync.Mutex
	resumed chan struct{} // non-nil while paused; closed on resume
	pause   chan struct{} // closed when paused, so a Loop waiting its next probe stops waiting
}

// Pause stops the probes after the one in flight, if any. It may be repeated.
func (g *Gate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resumed != nil {
		return
	}
	g.resumed = make(chan struct{})
	if g.pause == nil {
		g.pause = make(chan struct{})
	}
	close(g.pause)
}

// Resume lets the probes go on, from the start of their schedule. It may be
// repeated.
func (g *Gate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resumed == nil {
		return
	}
	close(g.resumed)
	g.resumed, g.pause = nil, nil
}

// Paused reports whether the gate is paused.
func (g *Gate) Paused() bool { return g.paused() != nil }

// paused returns the channel closed on resume, nil while open.
func (g *Gate) paused() chan struct{} {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resumed
}

// pausedCh returns a channel closed once the gate is paused (nil for a nil
// Gate: never).
func (g *Gate) pausedCh() chan struct{} {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pause == nil {
		g.pause = make(chan struct{})
	}
	return g.pause
}
