// Package load is the benchmark's load generator: a fixed number of workers, each
// with its own keep-alive HTTP/1.1 connection, send the same GET request back to
// back for a fixed time after a warm-up. It counts answers, non-2xx answers,
// errors and the connections it opened (a keep-alive run opens exactly one per
// worker), and records the latency of every answer of the measured window in a
// histogram.
package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOptions reports options that cannot make a run.
var ErrOptions = errors.New("load: bad options")

// Defaults of Options.
const (
	DefaultTimeout     = 10 * time.Second
	defaultDialTimeout = 5 * time.Second
	// dialBackoff spaces the dials of a worker whose dial failed, so a dead target
	// costs a few errors per second instead of a busy loop.
	dialBackoff = 50 * time.Millisecond
)

// Options describe one run.
type Options struct {
	// Addr is the host:port to connect to.
	Addr string
	// Host is the Host header; empty means Addr.
	Host string
	// Path is the request target; empty means "/".
	Path string
	// Header holds extra request headers, in order.
	Header [][2]string
	// Conns is the number of workers, hence of concurrent connections (≥ 1).
	Conns int
	// Warmup runs before the measured window; its answers are not counted as
	// requests but its errors are.
	Warmup time.Duration
	// Duration is the measured window (> 0).
	Duration time.Duration
	// Timeout bounds each request (write and whole answer); 0 means DefaultTimeout.
	Timeout time.Duration
	// AtStart and AtEnd, when set, are called as the measured window opens and as
	// it closes (to read a process's CPU time, for instance). They run on Run's
	// goroutine while the workers keep sending: the connections are still open
	// when AtEnd runs.
	AtStart, AtEnd func()
}

// Result is what a run measured.
type Result struct {
	// Conns is Options.Conns.
	Conns int
	// Requests counts the answers (any status) completed in the measured window.
	Requests int64
	// Elapsed is the length of the measured window.
	Elapsed time.Duration
	// Latency holds the time from writing each request to reading the end of its
	// answer, for the answers of the measured window.
	Latency *Histogram
	// Non2xx counts answers outside 200-299 over the whole run (warm-up included);
	// FirstNon2xx is the status of the first one.
	Non2xx      int64
	FirstNon2xx int
	// Errors counts failed dials and failed requests over the whole run;
	// FirstError describes the first one.
	Errors     int64
	FirstError error
	// Dials counts the connections opened over the whole run.
	Dials int64
}

// RPS returns the answers per second of the measured window.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Clean reports whether the run had no error and no non-2xx answer.
func (r Result) Clean() bool { return r.Errors == 0 && r.Non2xx == 0 }

// Problem describes the errors and non-2xx answers of the run, or returns "".
func (r Result) Problem() string {
	if r.Clean() {
		return ""
	}
	return fmt.Sprintf("%d errors (first: %v), %d non-2xx answers (first: %d)", r.Errors, r.FirstError, r.Non2xx, r.FirstNon2xx)
}

// phases of a run, read by the workers after each answer.
const (
	phaseWarmup  int32 = iota
	phaseMeasure       // answers count
	phaseClosing       // the window has closed; still sending while AtEnd runs
	phaseDone          // workers stop
)

// Run sends requests as Options say and returns what it measured. It blocks for
// Warmup + Duration, plus the time the last answers take. Errors and non-2xx
// answers are counted in the Result, not returned: Run returns an error only for
// bad options or when ctx ends (then the Result is partial).
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Addr == "" || o.Conns < 1 || o.Duration <= 0 || o.Warmup < 0 {
		return Result{}, fmt.Errorf("%w: need an address, at least one connection and a positive duration", ErrOptions)
	}
	if o.Host == "" {
		o.Host = o.Addr
	}
	if o.Path == "" {
		o.Path = "/"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	req := buildRequest(o.Host, o.Path, o.Header)

	var phase atomic.Int32
	workers := make([]*worker, o.Conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{o: &o, req: req, phase: &phase, hist: NewHistogram()}
		workers[i] = w
		wg.Go(func() { w.run(ctx) })
	}

	res := Result{Conns: o.Conns, Latency: NewHistogram()}
	var start, end time.Time
	if sleep(ctx, o.Warmup) {
		phase.Store(phaseMeasure)
		if o.AtStart != nil {
			o.AtStart()
		}
		start = time.Now()
		if sleep(ctx, o.Duration) {
			// The load goes on until AtEnd has run, so that it sees the
			// connections and processes as they were during the window.
			phase.Store(phaseClosing)
			end = time.Now()
			if o.AtEnd != nil {
				o.AtEnd()
			}
		}
	}
	phase.Store(phaseDone)
	wg.Wait()

	for _, w := range workers {
		res.Requests += w.requests
		res.Latency.Merge(w.hist)
		res.Non2xx += w.non2xx
		if res.FirstNon2xx == 0 {
			res.FirstNon2xx = w.firstNon2xx
		}
		res.Errors += w.errors
		if res.FirstError == nil {
			res.FirstError = w.firstErr
		}
		res.Dials += w.dials
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.Elapsed = end.Sub(start)
	return res, nil
}

// sleep waits for d and reports whether it did (false: ctx ended first).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// worker owns one connection at a time and its own counters.
type worker struct {
	o     *Options
	req   []byte
	phase *atomic.Int32

	hist        *Histogram
	requests    int64
	non2xx      int64
	firstNon2xx int
	errors      int64
	firstErr    error
	dials       int64
}

func (w *worker) fail(err error) {
	w.errors++
	if w.firstErr == nil {
		w.firstErr = err
	}
}

func (w *worker) run(ctx context.Context) {
	var k *conn
	var stopWatch func() bool
	drop := func() {
		stopWatch()
		_ = k.close()
		k = nil
	}
	defer func() {
		if k != nil {
			drop()
		}
	}()
	dialer := net.Dialer{Timeout: defaultDialTimeout}
	for w.phase.Load() != phaseDone && ctx.Err() == nil {
		if k == nil {
			c, err := dialer.DialContext(ctx, "tcp", w.o.Addr)
			w.dials++
			if err != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("dial: %w", err))
					sleep(ctx, dialBackoff)
				}
				continue
			}
			// A cancelled run unblocks a request in flight at once.
			stopWatch = context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
			k = newConn(ctx, c, w.req, w.o.Timeout)
		}
		t0 := time.Now()
		status, reusable, err := k.roundTrip()
		if ctx.Err() != nil {
			return // the deadline set by the watch may have caused err
		}
		t1 := time.Now()
		if err != nil {
			w.fail(err)
			drop()
			continue
		}
		if w.phase.Load() == phaseMeasure {
			w.requests++
			w.hist.Record(t1.Sub(t0))
		}
		if status < 200 || status > 299 {
			w.non2xx++
			if w.firstNon2xx == 0 {
				w.firstNon2xx = status
			}
		}
		if !reusable {
			drop()
		}
	}
}
