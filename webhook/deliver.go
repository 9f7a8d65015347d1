package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/reapergw/reaper/reaper"
)

// window is how many of a queue's oldest events the deliverer reads at a time:
// the first event of each app among them may go. An app whose first event is
// further back waits until the events before it are done.
const window = 256

// parallel bounds the deliveries under way at once for one webhook, each for
// a different app.
const parallel = 4

// Run delivers the webhooks' queues until ctx ends, then waits for the
// deliveries under way (cut short by ctx). It runs on the leader only (on a
// single node, always): a new leader goes on where the last one left off,
// since the queues are in the store. An event is delivered at least once:
// one delivered by a leader that died before it could remove it from the
// queue is delivered again, with the same id.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range s.hooks {
		wg.Go(func() { s.deliverLoop(ctx, h) })
	}
	wg.Wait()
}

// retry is what the deliverer knows of an event it tried: how many attempts
// failed and when the next is due, or that it was delivered but not yet
// removed from the queue (the store failed).
type retry struct {
	attempts  int
	next      time.Time
	delivered bool
}

// deliverLoop delivers h's queue, one round at a time; it waits between rounds
// for the next retry due, an event queued on this node, or the poll.
func (s *Service) deliverLoop(ctx context.Context, h *hook) {
	retries := map[string]*retry{}
	for ctx.Err() == nil {
		wait := s.round(ctx, h, retries)
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-h.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// round reads h's queue and delivers what is due: the first event of each app,
// unless it waits for a retry. It returns how long to wait before the next
// round: 0 when this one got somewhere (more may be due at once).
func (s *Service) round(ctx context.Context, h *hook, retries map[string]*retry) time.Duration {
	evs, err := s.opts.Queue.Pending(ctx, h.name, window)
	if err != nil {
		s.storeFailed(ctx, h, "reading a webhook's queue failed; trying again", err)
		return s.opts.Poll
	}
	forget(retries, evs)
	due, expired, wait := plan(evs, retries, time.Now(), h.maxAge, s.opts.Poll)
	progress := false
	for _, ev := range expired {
		s.obs.WebhookDelivery(h.name, OutcomeDropped)
		s.log.Warn("webhook: an event was not delivered within max_age; dropped", "webhook", h.name,
			"event_id", ev.ID, "type", ev.Type, "app", ev.AppID, "max_age", h.maxAge, "attempts", attempts(retries, ev.ID))
		progress = s.ack(ctx, h, ev, retries) || progress
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for _, ev := range due {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if s.deliver(ctx, h, ev, retries, &mu) {
				mu.Lock()
				progress = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if progress {
		return 0
	}
	return wait
}

// deliver sends ev once (unless it was delivered already and only its removal
// from the queue failed) and records the outcome; true when the event is done
// with (delivered or dropped) and removed from the queue.
func (s *Service) deliver(ctx context.Context, h *hook, ev reaper.QueuedEvent, retries map[string]*retry, mu *sync.Mutex) bool {
	mu.Lock()
	r := retries[ev.ID]
	if r == nil {
		r = &retry{}
		retries[ev.ID] = r
	}
	already, n := r.delivered, r.attempts+1
	mu.Unlock()
	if already {
		return s.ackLocked(ctx, h, ev, retries, mu)
	}
	res := s.attempt(ctx, h, ev, n)
	if ctx.Err() != nil {
		return false // leadership ended: the next leader tries again
	}
	switch res.outcome {
	case OutcomeDelivered:
		s.obs.WebhookDelivery(h.name, OutcomeDelivered)
		if h.failing.Swap(false) {
			s.log.Info("webhook: the receiver takes events again", "webhook", h.name, "event_id", ev.ID, "attempt", n)
		}
		mu.Lock()
		r.delivered = true
		mu.Unlock()
	case OutcomeDropped:
		s.obs.WebhookDelivery(h.name, OutcomeDropped)
		s.log.Warn("webhook: the receiver refused an event; dropped", "webhook", h.name, "event_id", ev.ID,
			"type", ev.Type, "app", ev.AppID, "status", res.status, "attempt", n)
	default:
		s.obs.WebhookDelivery(h.name, OutcomeRetried)
		wait := backoff(n, s.opts.MinBackoff, s.opts.MaxBackoff, res.retryAfter)
		level := s.log.Debug
		if !h.failing.Swap(true) {
			level = s.log.Warn
		}
		level("webhook: an event could not be delivered; retrying", "webhook", h.name, "event_id", ev.ID,
			"type", ev.Type, "app", ev.AppID, "attempt", n, "status", res.status, "err", res.err, "retry_in", wait.Round(time.Millisecond))
		mu.Lock()
		r.attempts, r.next = n, time.Now().Add(wait)
		mu.Unlock()
		return false
	}
	return s.ackLocked(ctx, h, ev, retries, mu)
}

func (s *Service) ackLocked(ctx context.Context, h *hook, ev reaper.QueuedEvent, retries map[string]*retry, mu *sync.Mutex) bool {
	err := s.remove(ctx, h, ev)
	mu.Lock()
	defer mu.Unlock()
	return acked(retries, ev.ID, err)
}

func (s *Service) ack(ctx context.Context, h *hook, ev reaper.QueuedEvent, retries map[string]*retry) bool {
	return acked(retries, ev.ID, s.remove(ctx, h, ev))
}

// remove removes ev from h's queue.
func (s *Service) remove(ctx context.Context, h *hook, ev reaper.QueuedEvent) error {
	err := s.opts.Queue.Ack(ctx, h.name, ev.ID)
	if err != nil {
		s.storeFailed(ctx, h, "removing an event from a webhook's queue failed; trying again", err)
	}
	return err
}

// acked records the removal of event id from its queue: forgotten once
// removed; when the store failed, marked done, so that the next round only
// removes it. It reports whether it was removed.
func acked(retries map[string]*retry, id string, err error) bool {
	if err == nil {
		delete(retries, id)
		return true
	}
	if r := retries[id]; r != nil {
		r.delivered = true
	} else {
		retries[id] = &retry{delivered: true}
	}
	return false
}

// storeFailed logs a store error, at most once a minute per webhook.
func (s *Service) storeFailed(ctx context.Context, h *hook, msg string, err error) {
	if ctx.Err() != nil {
		return
	}
	now := time.Now().UnixNano()
	if last := h.storeErr.Load(); now-last >= int64(time.Minute) && h.storeErr.CompareAndSwap(last, now) {
		s.log.Warn("webhook: "+msg, "webhook", h.name, "err", err)
	}
}

func attempts(retries map[string]*retry, id string) int {
	if r := retries[id]; r != nil {
		return r.attempts
	}
	return 0
}

// forget drops what is known of events no longer in the queue's window.
func forget(retries map[string]*retry, evs []reaper.QueuedEvent) {
	in := make(map[string]bool, len(evs))
	for _, ev := range evs {
		in[ev.ID] = true
	}
	for id := range retries {
		if !in[id] {
			delete(retries, id)
		}
	}
}

// plan picks, from evs (a queue's oldest events, oldest first), the first
// event of each app: expired when it was queued more than maxAge ago, due when
// it was not tried yet, its retry is due, or it was delivered and only its
// removal is left. wait is until the earliest retry of the others, at most
// poll. Events behind an app's first wait for it: each app's events go in
// order.
func plan(evs []reaper.QueuedEvent, retries map[string]*retry, now time.Time, maxAge, poll time.Duration) (due, expired []reaper.QueuedEvent, wait time.Duration) {
	wait = poll
	seen := map[string]bool{}
	for _, ev := range evs {
		if seen[ev.AppID] {
			continue
		}
		seen[ev.AppID] = true
		r := retries[ev.ID]
		switch {
		case r != nil && r.delivered:
			due = append(due, ev)
		case now.Sub(ev.QueuedAt) >= maxAge:
			expired = append(expired, ev)
		case r == nil || !now.Before(r.next):
			due = append(due, ev)
		default:
			wait = min(wait, r.next.Sub(now))
		}
	}
	return due, expired, wait
}

// backoff is the wait after the nth failed attempt: min doubled n-1 times, at
// most max, ±20%; at least retryAfter (the receiver's Retry-After), within max.
func backoff(n int, minWait, maxWait, retryAfter time.Duration) time.Duration {
	d := maxWait
	if n-1 < 32 {
		d = min(minWait<<(n-1), maxWait)
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(d, min(retryAfter, maxWait))
}

// result is what one attempt got.
type result struct {
	outcome    string // OutcomeDelivered, OutcomeDropped or OutcomeRetried
	status     int    // the receiver's status; 0 when it did not answer
	err        error  // why it did not answer
	retryAfter time.Duration
}

// attempt POSTs ev to h once, within h's timeout.
func (s *Service) attempt(ctx context.Context, h *hook, ev reaper.QueuedEvent, n int) result {
	body, err := encode(h.Format, ev, s.opts.AlertWakeAfter)
	if err != nil {
		return result{outcome: OutcomeDropped, err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return result{outcome: OutcomeDropped, err: errors.New("the URL cannot be used")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opts.UserAgent)
	req.Header.Set(HeaderEventID, ev.ID)
	req.Header.Set(HeaderEventType, ev.Type)
	req.Header.Set(HeaderAttempt, strconv.Itoa(n))
	if len(h.secret) > 0 {
		req.Header.Set(HeaderSignature, Sign(h.secret, time.Now(), body))
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return result{outcome: OutcomeRetried, err: withoutURL(err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is used again
	resp.Body.Close()
	return classify(resp)
}

// classify says what a receiver's answer means: 2xx delivered; 408, 429 and
// 5xx try again later (after Retry-After, when given in seconds); anything
// else (another 4xx, a redirect) is a refusal that no retry would change.
func classify(resp *http.Response) result {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return result{outcome: OutcomeDelivered, status: code}
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		r := result{outcome: OutcomeRetried, status: code}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			r.retryAfter = time.Duration(secs) * time.Second
		}
		return r
	}
	return result{outcome: OutcomeDropped, status: code}
}

// withoutURL is err without the URL that net/http puts in its errors: the URL
// may hold a token (a Slack webhook's does).
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
