package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/reapergw/reaper/paas"
)

// The back-off of an engine's event stream: from minBackoff, doubling up to
// maxBackoff; back to minBackoff after a stream that lasted stableAfter.
const (
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
	stableAfter = 30 * time.Second
)

// host is one engine and the containers it was last seen with.
type host struct {
	name      string
	eng       engine
	local     bool          // on this machine: its containers' own addresses can be probed
	firstSync chan struct{} // closed once its containers were listed once

	mu      sync.Mutex // guards what follows
	up      bool       // the event stream runs and the containers were listed
	lastErr error
	synced  bool
	views   map[string]*view // by container id: those that opted in, or that declared apps name
	// The last outage: when the stream was lost, and when the engine was
	// listed again after it (zero: none yet), for cameBackWhy.
	lostAt, backAt time.Time
}

// outage returns the engine's last outage (zero times: none).
func (h *host) outage() (lost, back time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostAt, h.backAt
}

func newHost(name string, eng engine, local bool) *host {
	return &host{name: name, eng: eng, local: local, firstSync: make(chan struct{}), views: map[string]*view{}}
}

// unreachable returns an error wrapping paas.ErrUnavailable while the engine's
// stream is down: what the driver remembers of it may be stale.
func (h *host) unreachable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.up {
		return nil
	}
	if h.lastErr == nil {
		return fmt.Errorf("engine %s not listed yet: %w", h.name, paas.ErrUnavailable)
	}
	return fmt.Errorf("engine %s unreachable (%v): %w", h.name, h.lastErr, paas.ErrUnavailable)
}

// follow follows the engine's event stream until the driver is closed,
// reconnecting with a back-off whenever it drops.
func (d *Driver) follow(h *host) {
	defer d.wg.Done()
	backoff := minBackoff
	for d.base.Err() == nil {
		began := time.Now()
		err := d.followOnce(h)
		if d.base.Err() != nil {
			return
		}
		if time.Since(began) >= stableAfter {
			backoff = minBackoff
		}
		h.mu.Lock()
		wasUp := h.up
		h.up, h.lastErr = false, err
		if wasUp {
			h.lostAt, h.backAt = time.Now(), time.Time{}
		}
		h.mu.Unlock()
		if wasUp {
			d.log.Warn("docker engine lost: reconnecting", "engine", h.name, "err", err, "retry_in", backoff)
			d.notifyHost(h)
		} else {
			d.log.Debug("docker engine still unreachable", "engine", h.name, "err", err, "retry_in", backoff)
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-d.base.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// followOnce subscribes to the engine's container events, lists its containers,
// then applies each event until the stream ends; it returns why it ended.
func (d *Driver) followOnce(h *host) error {
	ctx, cancel := context.WithCancel(d.base)
	defer cancel()
	// Subscribed before listing, so that no change between the two is missed.
	msgs, errs := h.eng.Events(ctx)
	d.recMu.Lock()
	views, err := d.list(ctx, h)
	if err != nil {
		d.recMu.Unlock()
		return err
	}
	h.mu.Lock()
	h.views, h.up, h.lastErr = views, true, nil
	if !h.lostAt.IsZero() && h.backAt.IsZero() {
		h.backAt = time.Now()
	}
	first := !h.synced
	h.synced = true
	h.mu.Unlock()
	d.log.Info("docker engine connected", "engine", h.name, "containers", len(views))
	d.reconcile(first)
	d.recMu.Unlock()
	if first {
		close(h.firstSync)
	}
	d.notifyHost(h)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return errors.New("event stream closed")
			}
			d.onEvent(ctx, h, m)
		case err := <-errs:
			if err == nil {
				err = errors.New("event stream ended")
			}
			return err
		}
	}
}

// list reads the engine's containers that matter to the driver: every one that
// opted in, and those the declared apps of this engine name.
func (d *Driver) list(ctx context.Context, h *host) (map[string]*view, error) {
	all, err := h.eng.List(ctx)
	if err != nil {
		return nil, classify(h.name, "listing containers", err)
	}
	out := map[string]*view{}
	for _, s := range all {
		if !d.relevant(h, s.id, s.name, s.labels) {
			continue
		}
		v, err := h.eng.Inspect(ctx, s.id)
		if errors.Is(err, errGone) {
			continue // removed between the two calls
		}
		if err != nil {
			return nil, classify(h.name, "inspecting "+s.name, err)
		}
		out[v.id] = &v
	}
	return out, nil
}

// relevant reports whether a container matters to the driver.
func (d *Driver) relevant(h *host, id, name string, labels map[string]string) bool {
	if d.labels && optedIn(labels) {
		return true
	}
	for _, a := range d.known.EachDeclared() {
		if a.h == h && matches(a.spec.container, id, name) {
			return true
		}
	}
	return false
}

// matches reports whether a declared container reference names a container.
func matches(ref, id, name string) bool {
	ref = strings.TrimPrefix(ref, "/")
	return ref == name || ref == id || (len(ref) >= 12 && strings.HasPrefix(id, ref))
}

// onEvent applies one container event: the container is read again (or dropped),
// and the apps it concerns are told.
func (d *Driver) onEvent(ctx context.Context, h *host, m events.Message) {
	switch {
	case m.Action == events.ActionCreate, m.Action == events.ActionStart, m.Action == events.ActionRestart,
		m.Action == events.ActionDie, m.Action == events.ActionStop, m.Action == events.ActionPause,
		m.Action == events.ActionUnPause, m.Action == events.ActionDestroy, m.Action == events.ActionRename,
		m.Action == events.ActionOOM, strings.HasPrefix(string(m.Action), string(events.ActionHealthStatus)):
	default:
		return // exec, attach, resize, top, …: nothing that changes an app
	}
	id := m.Actor.ID
	d.recMu.Lock()
	defer d.recMu.Unlock()
	h.mu.Lock()
	_, known := h.views[id]
	h.mu.Unlock()
	if !known && !d.relevant(h, id, m.Actor.Attributes["name"], m.Actor.Attributes) {
		return
	}
	var nv *view
	if m.Action != events.ActionDestroy {
		v, err := h.eng.Inspect(ctx, id)
		switch {
		case errors.Is(err, errGone):
		case err != nil:
			d.log.Warn("cannot read a container after an event; it is read again on the next one", "engine", h.name, "container", id[:min(12, len(id))], "event", m.Action, "err", err)
			return
		case known || d.relevant(h, v.id, v.name, v.labels):
			nv = &v
		}
	}
	h.mu.Lock()
	if nv != nil {
		h.views[id] = nv
	} else {
		delete(h.views, id)
	}
	h.mu.Unlock()
	d.reconcile(false)
}

// notifyHost tells watchers about every app of the engine.
func (d *Driver) notifyHost(h *host) {
	var ids []string
	for _, a := range d.apps() {
		if a.h == h {
			ids = append(ids, a.spec.id)
		}
	}
	d.notify(ids...)
}

// refresh reads the app's container (id) again after a start or a stop and
// records it as an event's read would be, so that Observe is up to date when the
// call returns.
func (d *Driver) refresh(ctx context.Context, a *app, id string) {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	v, err := a.h.eng.Inspect(ctx, id)
	a.h.mu.Lock()
	switch {
	case err == nil:
		a.h.views[v.id] = &v
	case errors.Is(err, errGone):
		delete(a.h.views, id)
	default:
		a.h.mu.Unlock()
		return // the engine's next event tells
	}
	a.h.mu.Unlock()
	d.reconcile(false)
}
