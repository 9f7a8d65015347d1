package clevercloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-resty/resty/v2"

	"github.com/reapergw/reaper/paas"
)

// ErrRejected: the API refused the request for a reason no other sentinel names
// (a 400 it did not explain, a redirect). Not retryable without a change.
var ErrRejected = errors.New("clevercloud: request refused")

// request is one API call.
type request struct {
	op     string   // what the call is for, in messages: "observe", "start", …
	app    paas.App // the app it is about; zero for summary and prices
	method string
	path   string
	query  map[string]string
	// safe: the call may be sent twice without harm, so it is retried after a
	// timeout too. A start or a stop whose answer was lost may have taken effect;
	// a second start could restart an app that is already up, so they are retried
	// only when the request surely did not arrive (no connection) or the API
	// answered a 5xx.
	safe bool
}

// result is what one attempt got.
type result struct {
	status int
	header http.Header
	body   []byte
	err    error // transport error
}

// do sends req through the gate, retrying platform failures within the retry
// budget (Options.Attempts, exponential back-off with jitter, bounded by ctx). It
// returns the body of a 2xx answer, or an error wrapping a paas sentinel.
func (c *Client) do(ctx context.Context, req request) ([]byte, error) {
	var last error
	made := 0
	for attempt := 1; attempt <= c.attempts; attempt++ {
		if attempt > 1 && !sleepCtx(ctx, c.retryWait(attempt-1)) {
			break
		}
		made = attempt
		release, err := c.gate.enter(ctx, c.gateWait)
		if err != nil {
			var rl *paas.RateLimitError
			if errors.As(err, &rl) {
				c.log.Debug("clevercloud: waiting for the rate limit to pass", "op", req.op, "app", req.app.ID,
					"retry_after", rl.RetryAfter)
				return nil, c.fail(req, "rate limited by the API, the driver is backing off", rl)
			}
			return nil, c.fail(req, "cancelled", fmt.Errorf("%w: %w", paas.ErrUnavailable, err))
		}
		start := time.Now()
		res := c.send(ctx, req)
		retry, err := c.classify(ctx, req, res)
		o := answered
		var retryAfter time.Duration
		switch {
		case res.err != nil:
			o = noAnswer
		case isRateLimit(res):
			o, retryAfter = limited, parseRetryAfter(res.header.Get("Retry-After"), time.Now())
		}
		release(o, retryAfter)
		c.log.Debug("clevercloud: call", "op", req.op, "method", req.method, "path", req.path,
			"status", res.status, "attempt", attempt, "duration", time.Since(start))
		if err == nil {
			return res.body, nil
		}
		if o == limited {
			c.log.Warn("clevercloud: rate limited by the API", "op", req.op, "app", req.app.ID,
				"retry_after", retryAfter, "gate_closed_for", c.gate.closedFor())
		}
		if !retry || ctx.Err() != nil {
			return nil, err
		}
		last = err
		if attempt < c.attempts {
			c.log.Warn("clevercloud: call failed, retrying", "op", req.op, "app", req.app.ID, "attempt", attempt,
				"error", err.Error())
		}
	}
	// Only a retryable error gets here (the first attempt always runs).
	return nil, fmt.Errorf("%w (gave up after %d attempts)", last, made)
}

// retryWait is the wait before retry n (1, 2, …): retryBase·2ⁿ⁻¹ capped at
// retryMax, with equal jitter.
func (c *Client) retryWait(n int) time.Duration {
	d := c.retryMax
	if n < 31 {
		d = min(c.retryBase<<(n-1), c.retryMax)
	}
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// send makes one attempt, bounded by the per-call timeout.
func (c *Client) send(ctx context.Context, req request) result {
	actx, cancel := context.WithTimeout(ctx, c.cfg.timeout())
	defer cancel()
	r := c.rc.R().SetContext(actx).
		SetHeader("Accept", "application/json").
		SetHeader("User-Agent", c.userAgent).
		SetHeader("Authorization", c.authorization())
	if len(req.query) > 0 {
		r.SetQueryParams(req.query)
	}
	resp, err := r.Execute(req.method, c.base+req.path)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			err = errTimeout
		}
		return result{err: err}
	}
	return result{status: resp.StatusCode(), header: resp.Header(), body: resp.Body()}
}

var errTimeout = errors.New("no answer in time")

// apiError is an error body of either API version: v2 {id, message, type,
// fields} or v4 {apiRequestId, code, context, error}.
type apiError struct {
	ID      json.Number `json:"id"`
	Message string      `json:"message"`
	Code    string      `json:"code"`
	Error   string      `json:"error"`
}

func parseAPIError(body []byte) apiError {
	var e apiError
	_ = json.Unmarshal(body, &e)
	if e.Message == "" {
		e.Message = e.Error
	}
	return e
}

func isRateLimit(res result) bool {
	switch res.status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
		// v2 answers a rate limit as 403 with body id 403 (RATE_LIMIT_HIT).
		return parseAPIError(res.body).ID.String() == "403"
	}
	return false
}

// classify turns an attempt's result into nil (a 2xx) or an error wrapping a paas
// sentinel, and says whether another attempt may help.
func (c *Client) classify(ctx context.Context, req request, res result) (retry bool, err error) {
	if res.err != nil {
		switch {
		case ctx.Err() != nil:
			return false, c.fail(req, "cancelled", fmt.Errorf("%w: %w", paas.ErrUnavailable, ctx.Err()))
		case errors.Is(res.err, errTimeout):
			return req.safe, c.fail(req, fmt.Sprintf("no answer within %s", c.cfg.timeout()), paas.ErrUnavailable)
		case errors.Is(res.err, resty.ErrResponseBodyTooLarge):
			return false, c.fail(req, "the answer is too large", paas.ErrUnavailable)
		}
		var op *net.OpError
		notSent := errors.As(res.err, &op) && op.Op == "dial"
		return req.safe || notSent, c.fail(req, "cannot reach the API: "+c.redact.clean(res.err.Error()), paas.ErrUnavailable)
	}
	st := res.status
	if st >= 200 && st < 300 {
		return false, nil
	}
	e := parseAPIError(res.body)
	detail := func(what string) string {
		if msg := c.clean(e.Message); msg != "" {
			return fmt.Sprintf("%s (HTTP %d: %s)", what, st, msg)
		}
		return fmt.Sprintf("%s (HTTP %d)", what, st)
	}
	switch {
	case st == http.StatusUnauthorized:
		return false, c.fail(req, detail(c.cfg.credentialKind()+" refused"), paas.ErrAuth)
	case isRateLimit(res):
		return false, c.fail(req, detail("rate limited"), &paas.RateLimitError{
			RetryAfter: parseRetryAfter(res.header.Get("Retry-After"), time.Now())})
	case st == http.StatusForbidden:
		return false, c.fail(req, detail(c.cfg.credentialKind()+" not allowed to do this"), paas.ErrAuth)
	case st == http.StatusNotFound:
		return false, c.fail(req, detail("not found, or the credential cannot see it"), paas.ErrNotFound)
	case e.ID.String() == "4014":
		return false, c.fail(req, detail("the app was never deployed"), paas.ErrNeverDeployed)
	case isLocked(st, e):
		return false, c.fail(req, detail("the app is locked by another operation"), paas.ErrBusy)
	case st >= 500:
		return true, c.fail(req, detail("the API failed"), paas.ErrUnavailable)
	}
	return false, c.fail(req, detail("the API refused the request"), ErrRejected)
}

// isLocked recognises the answer to a start or stop of an app locked by another
// operation (a deployment in progress). The reference documents no code for it:
// this driver takes HTTP 409, or a 4xx whose message says the app is locked or
// that a deployment is already in progress; the fake answers 409 with a v2 body.
func isLocked(status int, e apiError) bool {
	if status == http.StatusConflict {
		return true
	}
	m := strings.ToLower(e.Message)
	return status >= 400 && status < 500 &&
		(strings.Contains(m, "locked") || strings.Contains(m, "already") && strings.Contains(m, "in progress"))
}

// fail builds the error of a call: "clevercloud: start app_… (orga_…): detail: sentinel".
func (c *Client) fail(req request, detail string, sentinel error) error {
	what := req.op
	if req.app.ID != "" {
		what += " " + req.app.String()
	}
	return fmt.Errorf("clevercloud: %s: %s: %w", what, detail, sentinel)
}

// clean makes a server message fit for an error: no credential, no control
// characters, at most 200 characters.
func (c *Client) clean(s string) string {
	s = c.redact.clean(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date. Zero when
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return min(time.Duration(n)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}
