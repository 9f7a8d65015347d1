package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// The admin commands that read: apps, app, history.

func appsCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("apps", "apps [options]",
		"Lists every app: its status and for how long, its last access, when it will sleep\n"+
			"if nothing happens, its open requests and connections, its hold.", env, stdout, stderr)
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	var apps []reaper.AppView
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		apps, err = c.api.Apps(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	printApps(stdout, apps, time.Now())
	return nil
}

// printApps prints the apps as a table.
func printApps(w io.Writer, apps []reaper.AppView, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tSTATUS\tSINCE\tLAST ACCESS\tSLEEPS\tIN FLIGHT\tHOLD\tCAUSE")
	for _, a := range apps {
		cause := a.Cause
		if a.Status == reaper.StatusError && a.ErrorCause != "" {
			cause = a.ErrorCause
		}
		if !a.Managed {
			cause = strings.TrimSpace("(no route) " + cause)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AppID, a.Status, ago(a.LastStatusUpdate, now),
			ago(a.LastAccess, now), ago(a.ReapAt, now), orDashN(a.InFlight), holdText(a.Hold, now), orDash(cause))
	}
	tw.Flush()
}

func appCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("app", "app ID [options]",
		"Shows one app: status, clocks, open requests, hold, pending sleep, last wake.", env, stdout, stderr)
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var a reaper.AppView
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		a, err = c.api.App(ctx, pos[0])
		return err
	})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	printApp(stdout, a, time.Now())
	return nil
}

// printApp prints one app, a line per fact.
func printApp(w io.Writer, a reaper.AppView, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("app", a.AppID)
	status := string(a.Status) + " since " + ago(a.LastStatusUpdate, now)
	if a.Cause != "" {
		status += " (" + a.Cause + ")"
	}
	line("status", status)
	if a.ErrorCause != "" {
		line("error", a.ErrorCause)
	}
	if a.Managed {
		line("routes", strings.Join(a.Routes, ", "))
		grace := a.GracePeriod
		if a.GracePeriodFrom != "" {
			grace += " (" + a.GracePeriodFrom + ")"
		}
		line("policy", "sleeps after "+grace+" idle; a wake fails after "+a.FailTimeout)
		if a.PolicyError != "" {
			line("policy error", a.PolicyError+" (the routes' value applies)")
		}
		if a.DependsOnError != "" {
			line("depends_on", a.DependsOnError)
		} else if len(a.DependsOn) > 0 {
			line("depends_on", strings.Join(a.DependsOn, ", "))
		}
		if a.BusyURL != "" {
			line("busy_url", a.BusyURL+" ("+a.BusyURLFrom+"; a failing one keeps it up "+a.BusyMax+" at most)")
		}
	} else {
		line("routes", "none: known to the store only")
	}
	line("last access", ago(a.LastAccess, now))
	line("sleeps", ago(a.ReapAt, now))
	line("asleep since", ago(a.AsleepSince, now))
	line("up since", upSince(a, now))
	line("in flight", fmt.Sprintf("%d (held on this node: %d)", a.InFlight, a.Held))
	line("hold", holdText(a.Hold, now))
	if s := a.SleepAsked; s != nil {
		v := "asked " + agoAt(s.At, now) + " by " + orDash(s.By)
		if s.Force {
			v += " (forced)"
		}
		line("sleep", v)
	}
	if lw := a.LastWake; lw != nil {
		line("last wake", "asked "+agoAt(lw.AskedAt, now)+", "+phasesText(lw.Seconds, lw.Phases))
	}
	tw.Flush()
}

// upSince is when the app last came up, while it is Up.
func upSince(a reaper.AppView, now time.Time) string {
	if a.Status != reaper.StatusUp {
		return "-"
	}
	return ago(a.LastUpAt, now)
}

func historyCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("history", "history ID [--page N] [--page-size N] [options]",
		"Shows an app's history, newest first: changes of status, holds, releases, sleep\n"+
			"and wake asks (with who asked), and each wake's phases. The last 500 are kept.", env, stdout, stderr)
	page := fs.Int("page", 1, "the page, from 1")
	size := fs.Int("page-size", 50, "entries per page, 1 to 500")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var h reaper.HistoryPage
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		h, err = c.api.History(ctx, pos[0], *page, *size)
		return err
	})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	printHistory(stdout, h, time.Now())
	return nil
}

// printHistory prints a page of history as a table, and which page it is when
// there are more.
func printHistory(w io.Writer, h reaper.HistoryPage, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tAT\tEVENT\tSTATUS\tCAUSE\tBY\tNODE")
	for _, t := range h.Items {
		kind := t.Kind
		if kind == "" {
			kind = "status"
		}
		cause := t.Cause
		switch {
		case t.Kind == reaper.EventHold && t.Hold != nil:
			cause = strings.TrimSpace(t.Hold.Reason + " (until " + t.Hold.Until.Local().Format(time.DateTime) + ")")
		case t.Kind == reaper.EventWake && t.Phases != nil:
			cause = "woke in " + phasesText(t.Phases.Total().Seconds(), t.Phases.Durations())
		case t.Phases != nil: // the change to Up after a wake (reaper.UpPhases)
			cause = t.Cause + " in " + phasesText(t.Phases.Total().Seconds(), t.Phases.Durations())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", agoAt(t.At, now), t.At.Local().Format(time.DateTime),
			kind, change(t.From, t.To), orDash(cause), orDash(t.By), orDash(t.Node))
	}
	tw.Flush()
	if h.PageSize > 0 && h.Total > len(h.Items) {
		pages := (h.Total + h.PageSize - 1) / h.PageSize
		fmt.Fprintf(w, "\npage %d of %d (%d entries; --page N for more)\n", h.Page, pages, h.Total)
	}
}
