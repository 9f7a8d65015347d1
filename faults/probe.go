package main

import (
	"context"
	"time"
)

// What the injector asks the cluster before it strikes, through the nodes' admin
// API: who leads, which app sleeps, whether a node holds requests.

// probeTimeout bounds each of these questions.
const probeTimeout = 3 * time.Second

// appView is the part of GET /api/apps the harness reads.
type appView struct {
	AppID  string `json:"app_id"`
	Status string `json:"status"`
	Held   int    `json:"held"`
}

// leader returns the index of the node the nodes that are up name as leader, or
// -1 when none does within probeTimeout.
func (in *injector) leader(ctx context.Context) int {
	deadline := time.Now().Add(probeTimeout)
	for {
		for i, n := range in.w.cluster.Nodes {
			if in.w.isDown(i) {
				continue
			}
			st, err := in.w.cluster.Status(ctx, n)
			if err != nil || st.LeaderID == "" {
				continue
			}
			for j, m := range in.w.cluster.Nodes {
				if m.ID == st.LeaderID && !in.w.isDown(j) {
					return j
				}
			}
		}
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(50*time.Millisecond)) {
			return -1
		}
	}
}

// asleepWait bounds the wait for an app to fall asleep before a fault that wants
// one: apps sleep after each burst of traffic.
const asleepWait = 8 * time.Second

// asleep returns an app that node i says is Down, preferring the app prefer,
// waiting up to asleepWait for one; -1 when none fell asleep.
func (in *injector) asleep(ctx context.Context, i, prefer int) int {
	deadline := time.Now().Add(asleepWait)
	for {
		if a := in.asleepNow(ctx, i, prefer); a >= 0 {
			return a
		}
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return -1
		}
	}
}

// asleepNow returns an app that node i says is Down now, or -1.
func (in *injector) asleepNow(ctx context.Context, i, prefer int) int {
	status := in.statuses(ctx, i)
	for k := range in.w.apps {
		a := (prefer + k) % len(in.w.apps)
		if status[in.w.apps[a].id] == "Down" {
			return a
		}
	}
	return -1
}

// statuses returns every app's status as node i gives it (by app id; empty when
// the node does not answer).
func (in *injector) statuses(ctx context.Context, i int) map[string]string {
	var views []appView
	status := map[string]string{}
	if err := in.w.cluster.AdminGet(ctx, in.w.cluster.Nodes[i], "/api/apps", &views); err == nil {
		for _, v := range views {
			status[v.AppID] = v.Status
		}
	}
	return status
}

// platformUp reports whether the platform shows app i up and settled now.
func (in *injector) platformUp(i int) bool {
	st, _ := in.w.fake.App(in.w.apps[i].id)
	return sample{state: st.State, serving: st.Serving, action: st.Deployment.Action, depl: st.Deployment.State}.up()
}

// waitHeld waits until node i holds a request for the app, and returns how many
// it holds then (0 when it held none within probeTimeout: the app was awake, or
// the requests went elsewhere).
func (in *injector) waitHeld(ctx context.Context, i, app int) int {
	deadline := time.Now().Add(probeTimeout)
	for {
		var v appView
		if err := in.w.cluster.AdminGet(ctx, in.w.cluster.Nodes[i], "/api/apps/"+in.w.apps[app].id, &v); err == nil && v.Held > 0 {
			return v.Held
		}
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(20*time.Millisecond)) {
			return 0
		}
	}
}
