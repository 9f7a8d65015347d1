package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/bench/load"
)

// authSpecs are part J's runs: 64 keep-alive connections, as part A.
func authSpec(quick bool) runSpec {
	if quick {
		return runSpec{64, 300 * time.Millisecond, time.Second, 1}
	}
	return runSpec{64, 700 * time.Millisecond, 3 * time.Second, 4}
}

// runAuth runs part J and prints it.
func runAuth(ctx context.Context, e *env) ([]verdict, error) {
	bin, err := caddyBin()
	if err != nil {
		return nil, err
	}
	s, err := setupAuth(ctx, e, bin)
	if err != nil {
		return nil, err
	}
	defer s.reaper.shutdown()
	spec := authSpec(e.opts.quick)
	out := map[string][]authSample{}
	for r := range spec.rounds {
		for _, k := range roundOrder(s.keys(), r) {
			e.progressf("J: round %d/%d, %s, %d connections, %s", r+1, spec.rounds, authNames[k], spec.conns, spec.duration)
			x, err := measureAuth(ctx, s, k, spec)
			if err != nil {
				return nil, err
			}
			out[k] = append(out[k], x)
		}
	}
	vs := printJ(e.out, out, spec, s)
	if e.opts.profile != "" {
		return vs, profileAuth(ctx, e, s)
	}
	return vs, nil
}

// profileAuth saves a CPU profile of reaper (-profile FILE: FILE.auth) over a
// run of its own, long enough for a few thousand samples: reaper spends a
// fraction of a CPU here, a round's 3 s would give a few dozen.
func profileAuth(ctx context.Context, e *env, s *authSetup) error {
	spec := runSpec{conns: 64, warmup: time.Second, duration: 20 * time.Second, rounds: 1}
	if e.opts.quick {
		spec.duration = 3 * time.Second
	}
	hook, err := profileHook(ctx, e, s.reaper, spec, kCaddyAuth, e.opts.profile+".auth")
	if err != nil {
		return err
	}
	e.progressf("J: profiling reaper, %s, %d connections, %s", authNames[kCaddyAuth], spec.conns, spec.duration)
	after := hook(kCaddyAuth, 0)
	_, err = measureAuth(ctx, s, kCaddyAuth, spec)
	if herr := after(); err == nil {
		err = herr
	}
	return err
}

// perCall is an auth server's CPU per auth call in one round: its CPU over
// the window of the contestant that asks it (cpu, the run res), less its idle
// rate (its CPU over the Caddy-alone window of the same round, when no auth call
// comes) over as long, per request.
func perCall(idleCPU time.Duration, alone load.Result, cpu time.Duration, res load.Result) time.Duration {
	if res.Requests == 0 || alone.Elapsed <= 0 {
		return 0
	}
	idle := time.Duration(float64(idleCPU) * float64(res.Elapsed) / float64(alone.Elapsed))
	return max(cpu-idle, 0) / time.Duration(res.Requests)
}

// authRound is one round of part J, read.
type authRound struct {
	reaperCall, floorCall, nginxCall time.Duration // CPU per auth call (nginx's 0 without it)
	rps, p50                         [3]float64    // floor, reaper and nginx against Caddy alone
}

// readRound reads one round; nginx is nil without nginx.
func readRound(alone, floor, auth authSample, nginx *authSample) authRound {
	var r authRound
	r.reaperCall = perCall(alone.reaperCPU, alone.res, auth.reaperCPU, auth.res)
	r.floorCall = perCall(alone.floorCPU, alone.res, floor.floorCPU, floor.res)
	xs := []authSample{floor, auth}
	if nginx != nil {
		r.nginxCall = perCall(alone.nginxCPU, alone.res, nginx.nginxCPU, nginx.res)
		xs = append(xs, *nginx)
	}
	for i, x := range xs {
		r.rps[i] = x.res.RPS() / alone.res.RPS()
		r.p50[i] = float64(x.res.Latency.Quantile(0.5)) / float64(alone.res.Latency.Quantile(0.5))
	}
	return r
}

func printJ(w io.Writer, out map[string][]authSample, spec runSpec, s *authSetup) []verdict {
	fmt.Fprintf(w, "\nJ. Forward-auth through Caddy %s: %d keep-alive connections; %s\n", caddyVersion, spec.conns, specLine(spec))
	fmt.Fprintf(w, "   (the app was woken through reaper's gateway before, in %s; Caddy runs docs/integrations.md's recipe)\n", millis(s.wakeTime))
	fmt.Fprintf(w, "   %-24s %9s %11s %14s %16s   %s\n", "", "req/s", "p50", "Caddy CPU/req", "auth conns", "req/s of each round")
	fmt.Fprintf(w, "   %-24s %9s %11s %14s %16s\n", "", "", "", "", "open / closed")
	keys := s.keys()
	for _, k := range keys {
		ss := out[k]
		rounds := make([]string, len(ss))
		for i, x := range ss {
			rounds[i] = thousands(int64(x.res.RPS()))
		}
		rps := median(pickAuth(ss, func(x authSample) float64 { return x.res.RPS() }))
		p50 := median(pickAuth(ss, func(x authSample) time.Duration { return x.res.Latency.Quantile(0.5) }))
		ccpu := median(pickAuth(ss, func(x authSample) time.Duration { return x.caddyCPU }))
		conns := "-"
		if k != kCaddy {
			open := slices.Max(pickAuth(ss, func(x authSample) int { return x.authConns }))
			closed := slices.Max(pickAuth(ss, func(x authSample) int { return x.authClosed }))
			conns = fmt.Sprintf("%d / %d", open, closed)
		}
		fmt.Fprintf(w, "   %-24s %9s %11s %14s %16s   %s\n", authNames[k], thousands(int64(rps)), micros(p50), micros(ccpu), conns, strings.Join(rounds, "  "))
	}
	var rounds []authRound
	withNginx := len(keys) > len(authKeys)
	for i := range min(len(out[kCaddy]), len(out[kCaddyFloor]), len(out[kCaddyAuth])) {
		var nginx *authSample
		if withNginx && i < len(out[kCaddyNginx]) {
			nginx = &out[kCaddyNginx][i]
		}
		rounds = append(rounds, readRound(out[kCaddy][i], out[kCaddyFloor][i], out[kCaddyAuth][i], nginx))
	}
	each := func(f func(authRound) float64) (float64, []float64) {
		xs := make([]float64, len(rounds))
		for i, r := range rounds {
			xs[i] = f(r)
		}
		return median(xs), xs
	}
	names := []string{"bare Go auth", "reaper's auth"}
	if withNginx {
		names = append(names, "nginx auth")
	}
	for i, name := range names {
		rps, rpsEach := each(func(r authRound) float64 { return r.rps[i] })
		p50, p50Each := each(func(r authRound) float64 { return r.p50[i] })
		fmt.Fprintf(w, "   Caddy + %s / Caddy alone, paired by round: req/s %s (%s), p50 %s (%s).\n", name, ratio(rps), joinRatios(rpsEach), ratio(p50), joinRatios(p50Each))
	}
	fmt.Fprintln(w, "   auth conns: connections from Caddy to the auth server open at the window's end / closed in it (TIME_WAIT): ~0 closed = kept alive.")
	floor, floorEach := each(func(r authRound) float64 { return float64(r.floorCall) })
	call, callEach := each(func(r authRound) float64 { return float64(r.reaperCall) })
	diff, diffEach := each(func(r authRound) float64 { return float64(r.reaperCall - r.floorCall) })
	var nginxEach []float64
	if withNginx {
		_, nginxEach = each(func(r authRound) float64 { return float64(r.nginxCall) })
	}
	return printJCost(w, [3]time.Duration{time.Duration(floor), time.Duration(call), time.Duration(diff)}, [3][]float64{floorEach, callEach, diffEach}, nginxEach)
}

// printJCost prints the CPU per auth call of the bare server and of reaper,
// reaper's excess over the bare server (paired by round), and the verdict on
// what issue 24 asks: reaper's CPU per call. When a bare Go server alone is
// over the target, it says so: that is this machine's floor for any Go HTTP
// auth server, whatever reaper does above it. nginx's CPU per call, by round
// (none without nginx), is the floor of any server on the machine: printed,
// and named in the floor line when it is over the target too.
func printJCost(w io.Writer, med [3]time.Duration, each [3][]float64, nginx []float64) []verdict {
	floor, call, diff := med[0], med[1], med[2]
	fmt.Fprintf(w, "   CPU per auth call (idle CPU taken off): bare Go auth %s (%s), reaper %s (%s): reaper / bare %s.\n",
		micros(floor), joinMicros(each[0]), micros(call), joinMicros(each[1]), ratio(float64(call)/float64(floor)))
	var cFloor time.Duration
	if len(nginx) > 0 {
		cFloor = time.Duration(median(nginx))
		fmt.Fprintf(w, "   nginx answering 200 (C, one process, no access log): %s a call (%s); reaper / nginx %s.\n",
			micros(cFloor), joinMicros(nginx), ratio(float64(call)/float64(cFloor)))
	}
	fmt.Fprintf(w, "   reaper's own work over the bare server, paired by round: %s (%s): the route's access steps and the access line.\n",
		signedMicros(diff), joinSignedMicros(each[2]))
	if floor > authTarget {
		fmt.Fprintf(w, "   The floor: a bare Go HTTP server answering 200 costs %s a call here, %s the target on its own.\n",
			micros(floor), ratio(float64(floor)/float64(authTarget)))
	}
	if cFloor > authTarget {
		fmt.Fprintf(w, "   The C floor: nginx answering 200 costs %s a call here, %s the target on its own: a server meets it here only if a call costs it less than nginx.\n",
			micros(cFloor), ratio(float64(cFloor)/float64(authTarget)))
	}
	v := verdict{part: "J", what: "reaper CPU per auth call (awake app, through Caddy)", value: micros(call),
		target: "≤ " + micros(authTarget), pass: call <= authTarget, rounds: joinMicros(each[1])}
	fmt.Fprintf(w, "   %s reaper CPU per auth call: %s, target %s (its access line included; the bare floor %s, reaper over it %s).\n",
		passWord(v.pass), v.value, v.target, micros(floor), signedMicros(diff))
	return []verdict{v}
}

func pickAuth[T any](ss []authSample, f func(authSample) T) []T {
	out := make([]T, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// joinSignedMicros writes durations in ns as whole µs with their sign.
func joinSignedMicros(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x/float64(time.Microsecond), 'f', 0, 64)
		if x >= 0 {
			parts[i] = "+" + parts[i]
		}
	}
	return strings.Join(parts, " ")
}
