package valkeystore

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/reaper"
)

// Backoff of the subscription after it failed: from minResubscribe, doubling, up to
// maxResubscribe (the nodes' polling period, beyond which waiting gains nothing).
const (
	minResubscribe = 50 * time.Millisecond
	maxResubscribe = 2 * time.Second
)

// watchState is the store's side of Watch: one subscription to the records
// channel, shared by every watcher of the store.
type watchState struct {
	mu       sync.Mutex
	started  bool            // the subscription and resync goroutines run
	watchers reaper.Watchers // the callbacks; its own lock

	resync    chan struct{} // capacity 1: "tell every watcher about every record"
	confirmed atomic.Bool   // a subscription was confirmed once
	lost      atomic.Bool   // the subscription failed and is not back yet
}

// Watch implements reaper.RecordWatcher. It returns at once; changed is then
// called, from one goroutine per Watch call, with the id of each app whose record
// is put or deleted by any node, until ctx ends or the store is closed.
// Notifications start once the store's subscription is live, a moment after the
// first Watch returns.
//
// A slow callback never stalls the subscription: ids wait in a per-watcher set,
// so a burst of changes to one app while the callback runs makes one call (past
// reaper.MaxWatchPending waiting ids, more are dropped; see reaper.Watchers).
//
// When the connection drops, the store subscribes again (backing off up to 2 s)
// and, once subscribed, calls every watcher with the id of every record, since
// changes made meanwhile were not pushed. Deletions made meanwhile are not
// reported: the nodes' polling finds them.
func (s *Store) Watch(ctx context.Context, changed func(appID string)) {
	if ctx.Err() != nil {
		return
	}
	ws := &s.watch
	ws.mu.Lock()
	defer ws.mu.Unlock()
	// Checked under mu, which Close takes to cancel: no goroutine starts after
	// Close began waiting for them.
	if s.ctx.Err() != nil {
		return
	}
	if !ws.started {
		ws.started = true
		ws.resync = make(chan struct{}, 1)
		s.wg.Add(2)
		go s.subscribe()
		go s.resyncLoop()
	}
	ws.watchers.Add(ctx, changed)
}

// subscribe keeps the store subscribed to the records channel until it closes.
func (s *Store) subscribe() {
	defer s.wg.Done()
	ws := &s.watch
	var live atomic.Bool // the current attempt was confirmed
	ctx := valkey.WithOnSubscriptionHook(s.ctx, func(sub valkey.PubSubSubscription) {
		// Runs in the client's reading goroutine: no I/O here.
		if sub.Kind != "subscribe" {
			return
		}
		live.Store(true)
		again := ws.confirmed.Swap(true) // the client may resubscribe by itself
		if wasLost := ws.lost.Swap(false); again || wasLost {
			select {
			case ws.resync <- struct{}{}:
			default:
			}
		}
	})
	subscribe := func() valkey.Completed { return s.client.B().Subscribe().Channel(s.k.channel).Build() }
	backoff := minResubscribe
	for {
		live.Store(false)
		err := s.client.Receive(ctx, subscribe(), func(m valkey.PubSubMessage) { s.watch.watchers.Notify(m.Message) })
		if s.ctx.Err() != nil {
			return
		}
		if live.Load() {
			backoff = minResubscribe // it worked for a while: this is a new outage
		}
		if !ws.lost.Swap(true) {
			// One line per outage, not one per attempt.
			s.log.Warn("valkeystore: record watch lost its subscription; retrying",
				"addr", s.addr, "channel", s.k.channel, "err", s.scrub(cmp.Or(err, errUnsubscribed)).Error())
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxResubscribe)
	}
}

// resyncLoop tells every watcher about every record after a resubscription.
func (s *Store) resyncLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.watch.resync:
		}
		var apps []string
		err := s.call(s.ctx, "Watch", func(ctx context.Context) error {
			var err error
			apps, err = s.client.Do(ctx, s.client.B().Hkeys().Key(s.k.records).Build()).AsStrSlice()
			return err
		})
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("valkeystore: record watch could not list the records after subscribing again",
					"addr", s.addr, "err", err.Error())
			}
			continue // the nodes' polling covers it
		}
		s.log.Info("valkeystore: record watch subscribed again", "addr", s.addr, "records", len(apps))
		for _, app := range apps {
			s.watch.watchers.Notify(app)
		}
	}
}

// errUnsubscribed is the end of a subscription that the server ended without an
// error.
var errUnsubscribed = errors.New("unsubscribed by the server")
