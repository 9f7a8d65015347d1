package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// Groups in the CLI: `reaper groups` lists them, and the actions (wake, sleep,
// hold, release) take a group's id, which the admin API answers member by
// member (reaper.GroupActionAnswer).

// groupAnswer reads raw as a group's answer; ok false when it is an app's.
func groupAnswer(raw []byte) (reaper.GroupActionAnswer, bool) {
	var g reaper.GroupActionAnswer
	if json.Unmarshal(raw, &g) != nil || g.GroupID == "" {
		return g, false
	}
	return g, true
}

// printGroup prints a group's answer to an action, one line per member, and
// reports whether raw was one.
func (c *cli) printGroup(raw []byte, done string) bool {
	g, ok := groupAnswer(raw)
	if !ok {
		return false
	}
	for _, m := range g.Members {
		if m.Error != "" {
			fmt.Fprintf(c.stdout, "%s/%s: not done: %s\n", g.GroupID, m.AppID, m.Error)
			continue
		}
		fmt.Fprintf(c.stdout, "%s/%s: %s\n", g.GroupID, m.AppID, done)
	}
	return true
}

// waitGroupUp waits for each member of the group's answer, in start order.
func (c *cli) waitGroupUp(ctx context.Context, raw []byte, start time.Time, timeout time.Duration) error {
	g, _ := groupAnswer(raw)
	for _, m := range g.Members {
		if err := c.waitUp(ctx, m.AppID, start, timeout); err != nil {
			return err
		}
	}
	return nil
}

func groupsCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("groups", "groups [options]",
		"Lists the groups (groups[]): their members in start order, their status, whether\n"+
			"they are in use and when they go to sleep.", env, stdout, stderr)
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	var gs []reaper.GroupView
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		gs, err = c.api.Groups(ctx)
		return err
	})
	switch {
	case err != nil:
		return err
	case c.json:
		return c.printJSON(raw)
	}
	if len(gs) == 0 {
		fmt.Fprintln(stdout, "no groups")
		return nil
	}
	for _, g := range gs {
		sleep := "-"
		if g.SleepAt != nil {
			sleep = g.SleepAt.Local().Format(time.DateTime)
		}
		use := "idle"
		if g.InUse {
			use = "in use (" + g.Why + ")"
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\tgrace %s\tsleeps %s\t%s\n", g.GroupID, g.Status, use, g.GracePeriod, sleep, strings.Join(memberStatuses(g), " "))
	}
	return nil
}

func memberStatuses(g reaper.GroupView) []string {
	out := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		out = append(out, m.AppID+"="+string(m.Status))
	}
	return out
}
