package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/reaper"
)

// The admin commands that act on an app: wake, sleep, hold, release, reset. Each
// sends who does it (--by, the OS user by default), which the app's history keeps.

// action is the body of an action: who does it.
func (c *cli) action() reaper.ActionRequest {
	return reaper.ActionRequest{By: c.by}
}

func wakeCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("wake", "wake ID [--wait [--timeout 2m]] [options]",
		"Asks for the app's wake, as a request would. With --wait, follows the app until it\n"+
			"is Up: exit 0 then, 6 if it is not Up before --timeout, 7 if it is in Error.", env, stdout, stderr)
	c.addBy(fs)
	wait, timeout := addWait(fs)
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	start := time.Now()
	var a reaper.WakeAnswer
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		a, err = c.api.Wake(ctx, pos[0], c.action())
		return err
	})
	if err == nil && !c.json && c.printGroup(raw, "wake asked") {
		if *wait {
			return c.waitGroupUp(ctx, raw, start, *timeout)
		}
		return nil
	}
	switch {
	case err != nil:
		return err
	case *wait:
		if !c.json {
			fmt.Fprintf(stdout, "%s: wake asked (%s); waiting until it is Up\n", a.AppID, a.Status)
		}
		return c.waitUp(ctx, pos[0], start, *timeout)
	case c.json:
		return c.printJSON(raw)
	}
	fmt.Fprintf(stdout, "%s: wake asked (%s)\n", a.AppID, a.Status)
	return nil
}

// addWait adds --wait and --timeout.
func addWait(fs *flag.FlagSet) (wait *bool, timeout *time.Duration) {
	wait = fs.Bool("wait", false, "wait until the app is Up (exit 6 past --timeout, 7 if it is in Error); with --json, print the app then")
	timeout = fs.Duration("timeout", 2*time.Minute, "with --wait: how long to wait")
	return wait, timeout
}

// waitPoll is how often --wait reads the app.
const waitPoll = 250 * time.Millisecond

// waitUp reads the app until it is Up (status 0, printing the app with --json),
// in Error (exitAppError) or timeout has passed since start (exitTimeout).
func (c *cli) waitUp(ctx context.Context, id string, start time.Time, timeout time.Duration) error {
	wctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	var last reaper.Status
	for {
		var raw []byte
		a, err := c.api.App(adminapi.WithRaw(wctx, &raw), id)
		if wctx.Err() != nil {
			break
		}
		if err != nil {
			return c.fail(err)
		}
		switch {
		case a.Status == reaper.StatusUp && c.json:
			return c.printJSON(raw)
		case a.Status == reaper.StatusUp:
			fmt.Fprintf(c.stdout, "%s: Up after %s\n", id, seconds(time.Since(start).Seconds()))
			return nil
		case a.Status == reaper.StatusError:
			fmt.Fprintf(c.stderr, "%s: %s is in Error: %s; `reaper reset %s` puts it back\n", c.prog, id, orDash(a.ErrorCause), id)
			return exitCode(exitAppError)
		case a.Status != last && !c.json:
			fmt.Fprintf(c.stdout, "%s: %s\n", id, a.Status)
		}
		last = a.Status
		select {
		case <-wctx.Done():
		case <-tick.C:
		}
		if wctx.Err() != nil {
			break
		}
	}
	why := "not Up after " + timeout.String()
	if errors.Is(ctx.Err(), context.Canceled) {
		why = "stopped waiting"
	}
	fmt.Fprintf(c.stderr, "%s: %s: %s (last seen %s)\n", c.prog, id, why, orDash(string(last)))
	return exitCode(exitTimeout)
}

func sleepCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("sleep", "sleep ID [--force] [options]",
		"Puts the app to sleep now, once nothing is in flight. The API refuses (exit 5, with\n"+
			"the reason) when the app is not Up, has open requests, is in a keep-up range or\n"+
			"held awake; --force overrides the last three (ending the hold), yet never cuts a\n"+
			"request: the app sleeps once they end. --force also stops an app in Error or stuck\n"+
			"waking, which nothing else stops while the node runs.", env, stdout, stderr)
	c.addBy(fs)
	force := fs.Bool("force", false, "put it to sleep even when busy, held, in a keep-up range, in Error or stuck waking")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var a reaper.SleepAnswer
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		a, err = c.api.Sleep(ctx, pos[0], *force, c.action())
		return err
	})
	if err == nil && !c.json && c.printGroup(raw, "going to sleep") {
		return nil
	}
	switch {
	case err != nil:
		return err
	case c.json:
		return c.printJSON(raw)
	}
	msg := a.AppID + ": going to sleep"
	if a.Open > 0 {
		msg += fmt.Sprintf(" once its %d open requests or connections end", a.Open)
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

func holdCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("hold", "hold ID DURATION [--reason TEXT] [--wait [--timeout 2m]] [options]",
		"Keeps the app awake for DURATION (6h, 90m, 2d; from 1m to 90d), waking it if it\n"+
			"sleeps. A new hold replaces the app's current one. With --wait, returns once the\n"+
			"app is Up. For a job that needs the app:\n"+
			"  reaper hold db 6h --reason backup --wait && backup; reaper release db", env, stdout, stderr)
	c.addBy(fs)
	reason := fs.String("reason", "", "why, kept with the hold and in the history (up to 200 characters)")
	wait, timeout := addWait(fs)
	pos, err := c.parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	start := time.Now()
	req := c.action()
	req.Duration, req.Reason = pos[1], *reason
	var a reaper.HoldAnswer
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		a, err = c.api.Hold(ctx, pos[0], req)
		return err
	})
	if err == nil && !c.json && c.printGroup(raw, "held awake") {
		if *wait {
			return c.waitGroupUp(ctx, raw, start, *timeout)
		}
		return nil
	}
	switch {
	case err != nil:
		return err
	case c.json && *wait:
		return c.waitUp(ctx, pos[0], start, *timeout)
	case c.json:
		return c.printJSON(raw)
	}
	msg := a.AppID + ": held awake"
	if h := a.Hold; h != nil {
		msg += " until " + h.Until.Local().Format(time.DateTime) + " (" + agoAt(h.Until, time.Now()) + ") by " + orDash(h.By)
		if h.Reason != "" {
			msg += ": " + h.Reason
		}
	}
	if a.Status.Asleep() {
		msg += "; waking it"
	}
	fmt.Fprintln(stdout, msg)
	if *wait {
		return c.waitUp(ctx, pos[0], start, *timeout)
	}
	return nil
}

func releaseCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("release", "release ID [options]",
		"Ends the app's hold now; its idle clock counts from now. An app with no active\n"+
			"hold is not an error.", env, stdout, stderr)
	c.addBy(fs)
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var a reaper.ReleaseAnswer
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		a, err = c.api.Release(ctx, pos[0], c.action())
		return err
	})
	if err == nil && !c.json && c.printGroup(raw, "hold released") {
		return nil
	}
	switch {
	case err != nil:
		return err
	case c.json:
		return c.printJSON(raw)
	case a.Released:
		fmt.Fprintf(stdout, "%s: hold released\n", a.AppID)
	default:
		fmt.Fprintf(stdout, "%s: no active hold\n", a.AppID)
	}
	return nil
}

func resetCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("reset", "reset ID [options]",
		"Puts the app (usually in Error) back to WaitingForInit: the job observes it and\n"+
			"places it at once.", env, stdout, stderr)
	c.addBy(fs)
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var a reaper.ResetAnswer
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		a, err = c.api.Reset(ctx, pos[0], c.action())
		return err
	})
	switch {
	case err != nil:
		return err
	case c.json:
		return c.printJSON(raw)
	}
	fmt.Fprintf(stdout, "%s: reset to %s\n", a.AppID, a.Status)
	return nil
}
