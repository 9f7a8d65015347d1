package autotls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Limits of the ask endpoint's calls.
const (
	DefaultAskTimeout = 10 * time.Second
	// maxAsks bounds the asks in flight: handshakes for names beyond it are
	// refused rather than queued (a flood of made-up names must not pile up).
	maxAsks = 16
)

// ErrRefused: the ask endpoint did not answer 200 for the name.
var ErrRefused = errors.New("autotls: the ask endpoint refused the name")

// asker asks node.tls.acme.on_demand.ask whether a name may get a certificate,
// as Caddy's on_demand_tls ask does: GET ask?domain=NAME, 200 allows.
type asker struct {
	url    *url.URL
	client *http.Client
	sem    chan struct{}
}

func newAsker(raw string, timeout time.Duration) (*asker, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("autotls: the ask URL: %w", err)
	}
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	return &asker{url: u, client: &http.Client{Timeout: timeout}, sem: make(chan struct{}, maxAsks)}, nil
}

// allow returns nil when the endpoint answers 200 for name; ErrRefused for
// another status; another error when it cannot be asked. Errors name the
// endpoint's host, not its URL (whose query may hold a token).
func (a *asker) allow(ctx context.Context, name string) error {
	select {
	case a.sem <- struct{}{}:
		defer func() { <-a.sem }()
	default:
		return fmt.Errorf("autotls: %d asks are in flight already: %s not asked", maxAsks, name)
	}
	u := *a.url
	q := u.Query()
	q.Set("domain", name)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("autotls: ask %s about %s: %w", a.url.Host, name, err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("autotls: ask %s about %s: %w", a.url.Host, name, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s answered %d for %s", ErrRefused, a.url.Host, resp.StatusCode, name)
	}
	return nil
}
