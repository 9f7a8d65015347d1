package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part W: a Postgres NOTIFY wakes a worker (issue 25, item 6: "in under
// 100 ms"). A Postgres the bench runs itself, a reaper whose trigger LISTENs
// on it and wakes a demo app (grace period 1 s) that no request wakes. Each
// round waits until the worker is asleep, sends NOTIFY, and takes the time
// from just before the NOTIFY is sent to the time of reaper's log line "a wake
// trigger found work: waking" (its wake ask): this machine's wall clock both.

const (
	notifyRounds       = 10
	targetNotifyMedian = 100 * time.Millisecond
	notifyMsg          = "a wake trigger found work: waking"
)

func runNotify(ctx context.Context, e *env) ([]verdict, error) {
	dsn, err := startBenchPostgres(ctx, e)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := clusterenv.Config{
		Node:   newNodeConfig("bench-notify"),
		Reaper: &clusterenv.JobConfig{JobInterval: "1s", FastInterval: "200ms"},
		PaaS:   clusterenv.PaaSConfig{Driver: "process", Apps: []clusterenv.AppConfig{demoApp(e.demoBin, "worker", addr)}},
		Routes: []clusterenv.RouteConfig{reaperRoute("worker", "worker.test", addr, clusterenv.ReaperPluginConfig{
			AppID: "worker", GracePeriod: "1s", FailTimeout: "30s", APIBehavior: "hold"})},
		Triggers: []map[string]any{{"id": "jobs", "wake": "worker", "postgres_notify": map[string]any{"dsn": dsn, "channel": "jobs"}}},
	}
	e.progressf("W: starting reaper with a worker woken by a Postgres NOTIFY")
	node, err := startReaper(ctx, e, "notify", cfg)
	if err != nil {
		return nil, err
	}
	defer node.shutdown()
	if _, err := node.WaitMsg(ctx, "a wake trigger listens for notifications", clusterenv.StartTimeout); err != nil {
		return nil, err
	}
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rounds := notifyRounds
	if e.opts.quick {
		rounds = 2
	}
	c := clusterenv.NewClient(10 * time.Second)
	var lat []time.Duration
	for range rounds {
		if err := clusterenv.WaitStatus(ctx, c, node.gateway, "worker.test", "Down", sleepTimeout); err != nil {
			return nil, err
		}
		t0 := time.Now()
		d, err := notifyOnce(ctx, conn, node.Log)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		if _, err := logAfter(ctx, node.Log, "app woken", t0, sleepTimeout); err != nil {
			return nil, fmt.Errorf("bench: the worker was not started after a NOTIFY: %w", err)
		}
	}
	return printW(e.out, lat, node.Log.CountMsg("app woken", "worker")), nil
}

// notifyOnce sends NOTIFY and returns the time until reaper logged the wake
// ask it made of it.
func notifyOnce(ctx context.Context, conn *pgconn.PgConn, log *clusterenv.LogWatch) (time.Duration, error) {
	t0 := time.Now()
	if _, err := conn.Exec(ctx, "NOTIFY jobs").ReadAll(); err != nil {
		return 0, err
	}
	at, err := logAfter(ctx, log, notifyMsg, t0, 10*time.Second)
	if err != nil {
		return 0, fmt.Errorf("bench: no wake ask logged within 10 s of a NOTIFY: %w", err)
	}
	return at.Sub(t0), nil
}

// logAfter waits for a JSON log line with msg, logged at t0 or later, and
// returns its time.
func logAfter(ctx context.Context, log *clusterenv.LogWatch, msg string, t0 time.Time, timeout time.Duration) (time.Time, error) {
	var at time.Time
	_, err := log.WaitFor(ctx, timeout, func(line string) bool {
		var l struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Msg != msg || l.Time.Before(t0) {
			return false
		}
		at = l.Time
		return true
	})
	return at, err
}

// startBenchPostgres runs a Postgres of its own for the bench (not through
// reaper) and returns its connection string once it answers.
func startBenchPostgres(ctx context.Context, e *env) (string, error) {
	pg, err := newPGCluster(filepath.Join(e.tmp, "notify-pg"))
	if err != nil {
		return "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	if _, err := clusterenv.StartProcess(e.clean, "postgres (W)", pg.command(port), os.Environ(), pg.log); err != nil {
		return "", err
	}
	dsn := "postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=5"
	deadline := time.Now().Add(clusterenv.StartTimeout)
	for {
		conn, err := pgconn.Connect(ctx, dsn)
		if err == nil {
			_ = conn.Close(ctx)
			return dsn, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("bench: the Postgres of part W does not answer: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond): // the pause between two polls of a deadline-bounded wait
		}
	}
}

func printW(w io.Writer, lat []time.Duration, woken int) []verdict {
	fmt.Fprintf(w, "\nW. Wake triggers: a Postgres NOTIFY wakes a sleeping worker\n")
	each := make([]string, len(lat))
	for i, d := range lat {
		each[i] = millis(d)
	}
	med := median(lat)
	fmt.Fprintf(w, "   NOTIFY sent → reaper's wake ask (its log line): median %s (%s); \"app woken\" logged %d time(s) for %d NOTIFYs\n",
		millis(med), strings.Join(each, ", "), woken, len(lat))
	return []verdict{
		{"W", "NOTIFY → wake ask, median", millis(med), "< " + millis(targetNotifyMedian), med > 0 && med < targetNotifyMedian, strings.Join(each, ", ")},
		{"W", "worker started once per NOTIFY", fmt.Sprintf("%d / %d", woken, len(lat)), "equal", woken == len(lat), ""},
	}
}
