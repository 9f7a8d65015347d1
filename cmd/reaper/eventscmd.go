package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/reaper"
)

// reaper events: the node's event stream (server-sent events), followed until
// Ctrl-C, reconnecting with Last-Event-ID when it is cut.

// The pause before reconnecting a cut stream: from reconnectFirst, doubling up
// to reconnectMax while reconnecting brings no event.
const (
	reconnectFirst = 500 * time.Millisecond
	reconnectMax   = 10 * time.Second
)

func eventsCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("events", "events [--app ID] [options]",
		"Follows the node's events until Ctrl-C (exit 0): changes of status, holds and\n"+
			"releases, sleep and wake asks, wakes with their phases. It starts with the recent\n"+
			"events the node kept, and reconnects when the stream is cut, missing nothing the\n"+
			"node still keeps. One line per event; with --json, each event's JSON on one line.", env, stdout, stderr)
	app := fs.String("app", "", "only this app's events")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	return c.follow(ctx, func(data []byte) {
		var ev reaper.Event
		err := json.Unmarshal(data, &ev)
		switch {
		case *app != "" && (err != nil || ev.AppID != *app):
		case c.json || err != nil: // an event this version cannot read is printed as it came
			fmt.Fprintf(stdout, "%s\n", data)
		default:
			fmt.Fprintln(stdout, eventLine(ev, time.Now()))
		}
	})
}

// follow hands the data of each event of the stream to each until ctx ends
// (status 0). A stream that cannot be opened the first time, or is refused
// (4xx), ends the command with the failure's status; one cut later is opened
// again after the last event seen.
func (c *cli) follow(ctx context.Context, each func(data []byte)) error {
	var lastID string
	delay := reconnectFirst
	opened := false
	for {
		n, open, err := c.streamOnce(ctx, &lastID, each)
		if ctx.Err() != nil {
			return nil
		}
		var refused *adminapi.Error
		errors.As(err, &refused)
		if !open && (!opened || (refused != nil && refused.Status/100 == 4)) {
			return c.fail(err)
		}
		opened = opened || open
		if n > 0 {
			delay = reconnectFirst
		}
		why := "the stream ended"
		switch {
		case refused != nil:
			why = fmt.Sprintf("%s (%d)", c.admin.redact(apiError(refused.Body)), refused.Status)
		case err != nil:
			why = c.admin.redact(err.Error())
		}
		fmt.Fprintf(c.stderr, "%s: %s; reconnecting in %s\n", c.prog, why, delay)
		if !pause(ctx, delay) {
			return nil
		}
		delay = min(2*delay, reconnectMax)
	}
}

// streamOnce opens the event stream after *lastID and hands each event's data
// to each, keeping *lastID, until the stream ends. It returns how many events
// came, whether the stream was open, and the error that ended it or refused it
// (an *adminapi.Error).
func (c *cli) streamOnce(ctx context.Context, lastID *string, each func([]byte)) (n int, open bool, err error) {
	body, err := c.api.Events(ctx, *lastID)
	if err != nil {
		return 0, false, err
	}
	defer body.Close()
	err = readSSE(body, func(id string, data []byte) {
		n++
		if id != "" {
			*lastID = id
		}
		each(data)
	})
	return n, true, err
}

// readSSE reads server-sent events until r ends, handing each event's id and
// data to each. Comments, retry and event fields are skipped.
func readSSE(r io.Reader, each func(id string, data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var id string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				each(id, []byte(strings.Join(data, "\n")))
			}
			id, data = "", nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "data":
			data = append(data, value)
		}
	}
	return sc.Err()
}

// eventLine prints an event for people: its time, app, type, change of status,
// cause or details, who did it and where.
func eventLine(ev reaper.Event, now time.Time) string {
	at := ev.At.Local()
	when := at.Format(time.TimeOnly)
	if y, m, d := at.Date(); y != now.Local().Year() || m != now.Local().Month() || d != now.Local().Day() {
		when = at.Format(time.DateTime)
	}
	what := ev.Cause
	switch {
	case ev.Type == "status" && ev.Seconds > 0:
		what += fmt.Sprintf(" (after %s in %s)", short(time.Duration(ev.Seconds*float64(time.Second))), ev.From)
	case ev.Type == reaper.EventWake && ev.Phases != nil:
		what = "woke in " + phasesText(ev.Seconds, ev.Phases.Durations())
	case ev.Type == reaper.EventHold && ev.Hold != nil:
		what = strings.TrimSpace(ev.Hold.Reason + " (until " + ev.Hold.Until.Local().Format(time.DateTime) + ")")
	}
	line := fmt.Sprintf("%s  %-12s %-9s %-30s %s", when, ev.AppID, ev.Type, change(ev.From, ev.To), strings.TrimSpace(what))
	if ev.By != "" && !strings.Contains(what, "by "+ev.By) {
		line += " by " + ev.By
	}
	if ev.Node != "" {
		line += " [" + ev.Node + "]"
	}
	return strings.TrimRight(line, " ")
}
