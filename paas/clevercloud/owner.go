package clevercloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/reapergw/reaper/paas"
)

// ownerCache remembers each app's owner, as /v2/summary (or a successful call on
// the app) showed it. Owners do not change, so entries do not expire.
type ownerCache struct {
	refresh time.Duration // least time between two reads made to find a missing owner

	mu       sync.Mutex
	byApp    map[string]string
	lastRead time.Time     // of /v2/summary
	reading  chan struct{} // closed when the read in flight ends; nil when none
}

func (o *ownerCache) learn(appID, owner string) {
	if appID == "" || owner == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byApp == nil {
		o.byApp = map[string]string{}
	}
	o.byApp[appID] = owner
}

func (o *ownerCache) get(appID string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.byApp[appID]
	return owner, ok
}

// resolve returns the owner to use for app: its own, else the cached one, else
// Config.OwnerID, else the one /v2/summary shows.
func (c *Client) resolve(ctx context.Context, app paas.App) (string, error) {
	if app.Owner != "" {
		return app.Owner, nil
	}
	if owner, ok := c.owners.get(app.ID); ok {
		return owner, nil
	}
	if c.cfg.OwnerID != "" {
		return c.cfg.OwnerID, nil
	}
	return c.Owner(ctx, app.ID)
}

// Owner finds the owner (orga_… or user_…) of an app through /v2/summary. Answers
// are cached; an app missing from the cache causes at most one summary read per
// Options.OwnerRefresh (concurrent callers share it), so asking again and again
// for an unknown app does not flood the API. It blocks for at most one call with
// its retries. Errors wrap paas.ErrNotFound when the credential does not see the
// app, else those of ObserveAll.
func (c *Client) Owner(ctx context.Context, appID string) (string, error) {
	for {
		if owner, ok := c.owners.get(appID); ok {
			return owner, nil
		}
		o := &c.owners
		o.mu.Lock()
		if wait := o.reading; wait != nil {
			o.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", fmt.Errorf("clevercloud: find the owner of %s: %w", appID, ctx.Err())
			}
		}
		if !o.lastRead.IsZero() && time.Since(o.lastRead) < o.refresh {
			o.mu.Unlock()
			return "", fmt.Errorf("clevercloud: find the owner of %s: not among the apps the credential sees: %w",
				appID, paas.ErrNotFound)
		}
		done := make(chan struct{})
		o.reading = done
		o.mu.Unlock()
		_, err := c.summary(ctx)
		o.mu.Lock()
		o.reading = nil
		close(done)
		o.mu.Unlock()
		if err != nil {
			return "", err
		}
		if owner, ok := c.owners.get(appID); ok {
			return owner, nil
		}
		return "", fmt.Errorf("clevercloud: find the owner of %s: not among the apps the credential sees: %w",
			appID, paas.ErrNotFound)
	}
}

type summaryApp struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
}

type summaryOwner struct {
	ID           string       `json:"id"`
	Applications []summaryApp `json:"applications"`
}

// seenApp is one app of the summary.
type seenApp struct {
	owner, name, state string
}

// summary reads GET /v2/summary: every app the credential sees, by id. The user
// may appear among the organisations too; an app is kept once, by its id.
func (c *Client) summary(ctx context.Context) (map[string]seenApp, error) {
	req := request{op: "read the summary", method: http.MethodGet, path: "/v2/summary", safe: true}
	body, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	var s struct {
		User          summaryOwner   `json:"user"`
		Organisations []summaryOwner `json:"organisations"`
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, c.fail(req, "the answer is not a summary", paas.ErrUnavailable)
	}
	seen := map[string]seenApp{}
	for _, o := range append([]summaryOwner{s.User}, s.Organisations...) {
		for _, a := range o.Applications {
			if _, dup := seen[a.ID]; dup || a.ID == "" {
				continue
			}
			seen[a.ID] = seenApp{owner: o.ID, name: a.Name, state: a.State}
		}
	}
	o := &c.owners
	o.mu.Lock()
	if o.byApp == nil {
		o.byApp = map[string]string{}
	}
	for id, a := range seen {
		o.byApp[id] = a.owner
	}
	o.lastRead = time.Now()
	o.mu.Unlock()
	return seen, nil
}
