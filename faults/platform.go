package main

import (
	"context"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The platform's side: the fake Clever Cloud says what each app is at a given
// moment, not what it was. A sampler reads it every few milliseconds and keeps
// each app's changes, so the checks can ask whether an app was up at some time.

// sampleEvery is the sampler's resolution.
const sampleEvery = 50 * time.Millisecond

// sample is what the platform showed of an app from at on, until the next sample.
type sample struct {
	at      time.Time
	state   string // SHOULD_BE_UP, …
	serving bool   // the edge hands requests to the app
	action  string // of the newest deployment: DEPLOY or UNDEPLOY
	depl    string // its state: WIP, OK, …
}

// up reports whether the app was up and settled: started, serving, not stopping.
func (s sample) up() bool {
	return s.state == fakeclever.StateShouldBeUp && s.serving && s.action == fakeclever.ActionDeploy && s.depl == fakeclever.DeploymentOK
}

// sampler keeps the changes of every app.
type sampler struct {
	fake *fakeclever.Fake
	ids  []string

	mu    sync.Mutex
	lines [][]sample // per app, oldest first
}

func newSampler(fake *fakeclever.Fake, ids []string) *sampler {
	return &sampler{fake: fake, ids: ids, lines: make([][]sample, len(ids))}
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s.take(time.Now())
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// take reads every app once and keeps what changed.
func (s *sampler) take(now time.Time) {
	byID := map[string]fakeclever.Status{}
	for _, st := range s.fake.Apps() {
		byID[st.ID] = st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range s.ids {
		st := byID[id]
		cur := sample{at: now, state: st.State, serving: st.Serving, action: st.Deployment.Action, depl: st.Deployment.State}
		if n := len(s.lines[i]); n > 0 {
			last := s.lines[i][n-1]
			cur.at = last.at
			if cur == last {
				continue
			}
			cur.at = now
		}
		s.lines[i] = append(s.lines[i], cur)
	}
}

// timelines returns a copy of every app's samples.
func (s *sampler) timelines() [][]sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]sample, len(s.lines))
	for i, l := range s.lines {
		out[i] = append([]sample(nil), l...)
	}
	return out
}

// upBetween reports whether the app was up and settled at some moment of
// [from, to], and when first; the samples end at last (what came after is not
// known).
func upBetween(line []sample, from, to time.Time) (time.Time, bool) {
	for i, s := range line {
		end := time.Time{} // the sample holds until the next one
		if i+1 < len(line) {
			end = line[i+1].at
		}
		if !end.IsZero() && !end.After(from) {
			continue
		}
		if s.at.After(to) {
			break
		}
		if s.up() {
			if s.at.Before(from) {
				return from, true
			}
			return s.at, true
		}
	}
	return time.Time{}, false
}
