// Package webhook tells the outside what happens to the apps: each event (a
// change of status, an operator's action, a hold that ran out, a wake and a
// slow one) is queued in the store, one queue per webhook, and the leader
// delivers the queues: a POST per event, signed with HMAC-SHA256, retried with
// exponential back-off until the receiver takes it or the event is too old, in
// order for each app. docs/webhooks.md is the receiver's side.
package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// Observer is told each delivery's outcome (metrics): OutcomeDelivered,
// OutcomeRetried, OutcomeDropped.
type Observer interface {
	WebhookDelivery(webhook, outcome string)
}

// Outcomes of a delivery, as Observer is told them.
const (
	OutcomeDelivered = "delivered" // the receiver answered 2xx
	OutcomeRetried   = "retried"   // an attempt failed; another follows
	OutcomeDropped   = "dropped"   // refused (4xx), too old (max_age), pushed out of a full queue, or never queued
)

// Options configures New.
type Options struct {
	Hooks []Config
	// AlertWakeAfter: a wake that takes longer is a slow_wake event; 0: none.
	AlertWakeAfter time.Duration
	// Queue keeps the events (the node's store).
	Queue  reaper.EventQueue
	Logger *slog.Logger
	// Observer is told every outcome; nil: nothing.
	Observer Observer
	// Client sends the events; nil: one that follows no redirect.
	Client *http.Client
	// UserAgent of the requests; default "reaper".
	UserAgent string
	// MinBackoff and MaxBackoff bound the wait between two attempts of an
	// event (default 1 s and 5 min): it doubles from the first to the second,
	// with ±20% of jitter.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often the deliverer reads its queues when no event was
	// queued on this node (events queued by other nodes); default 2 s.
	Poll time.Duration
}

// Service queues the events of the webhooks (Notify, on any node) and delivers
// them (Run, on the leader).
type Service struct {
	opts  Options
	log   *slog.Logger
	obs   Observer
	hooks []*hook
}

// hook is a webhook, ready to use.
type hook struct {
	Config
	name     string
	url      string
	secret   []byte
	timeout  time.Duration
	maxAge   time.Duration
	limit    int
	events   map[string]bool
	apps     map[string]bool
	kick     chan struct{} // capacity 1: "an event was queued here"
	failing  atomic.Bool   // the last attempt failed (log once per streak)
	storeErr atomic.Int64  // unix nanoseconds of the last store error logged
}

var _ reaper.Notifier = (*Service)(nil)

// New returns the service of the configured webhooks (checked by Validate and
// Check).
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Client == nil {
		opts.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "reaper"
	}
	orDefault(&opts.MinBackoff, time.Second)
	orDefault(&opts.MaxBackoff, 5*time.Minute)
	orDefault(&opts.Poll, 2*time.Second)
	s := &Service{opts: opts, log: opts.Logger, obs: opts.Observer}
	if s.obs == nil {
		s.obs = noObserver{}
	}
	for _, c := range opts.Hooks {
		h := &hook{Config: c, name: c.ResolvedName(), url: c.URL.Reveal(), secret: []byte(c.Secret.Reveal()),
			timeout: c.Timeout.D(), maxAge: c.MaxAge.D(), limit: c.QueueLimit,
			events: set(c.Events), apps: set(c.Apps), kick: make(chan struct{}, 1)}
		orDefault(&h.timeout, DefaultTimeout)
		orDefault(&h.maxAge, DefaultMaxAge)
		orDefault(&h.limit, DefaultQueueLimit)
		s.hooks = append(s.hooks, h)
	}
	return s
}

func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

func set(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

type noObserver struct{}

func (noObserver) WebhookDelivery(string, string) {}

// Notify implements reaper.Notifier: it queues the events t makes in the
// queue of every webhook that takes them. A queue that is full drops its
// oldest events (counted and logged as dropped); an event that cannot be
// queued (the store fails twice) is lost, and logged.
func (s *Service) Notify(ctx context.Context, t reaper.Transition, appName string) {
	now := time.Now()
	for _, typ := range typesOf(t, s.opts.AlertWakeAfter) {
		ev := newEvent(t, typ, appName, now)
		for _, h := range s.hooks {
			if !wants(h.events, typ) || (len(h.apps) > 0 && !h.apps[t.AppID]) {
				continue
			}
			s.enqueue(ctx, h, ev)
		}
	}
}

// enqueue queues ev for h, trying once more after a failure, and kicks h's
// deliverer when it runs on this node.
func (s *Service) enqueue(ctx context.Context, h *hook, ev reaper.QueuedEvent) {
	dropped, err := s.opts.Queue.Enqueue(ctx, h.name, ev, h.limit)
	if err != nil && ctx.Err() == nil {
		select {
		case <-time.After(100 * time.Millisecond):
			dropped, err = s.opts.Queue.Enqueue(ctx, h.name, ev, h.limit)
		case <-ctx.Done():
		}
	}
	if err != nil {
		s.obs.WebhookDelivery(h.name, OutcomeDropped)
		s.log.Error("webhook: an event could not be queued, and is lost", "webhook", h.name, "event_id", ev.ID,
			"type", ev.Type, "app", ev.AppID, "err", err)
		return
	}
	if dropped > 0 {
		for range dropped {
			s.obs.WebhookDelivery(h.name, OutcomeDropped)
		}
		s.log.Warn("webhook: the queue is full; its oldest events were dropped", "webhook", h.name,
			"dropped", dropped, "queue_limit", h.limit)
	}
	select {
	case h.kick <- struct{}{}:
	default:
	}
}
