// Package adminapi is the client of reaper's admin API: one typed method per
// page and action, answering the types the server encodes (reaper.AppView,
// reaper.HoldAnswer, leader.Status, trigger.Answer, …), and a failure as an *Error with the
// API's status and message. The CLI calls a node's admin listener with it; the
// dashboard calls the admin API's handler in its own process through
// HandlerTransport, so that the API's rules (and, in a cluster, the forwarding of
// writes to the leader) apply to both alike.
package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/leader"
	"github.com/reapergw/reaper/reaper"
	"github.com/reapergw/reaper/trigger"
)

// DefaultMaxAnswer bounds an answer held in memory when Client.MaxAnswer is 0.
const DefaultMaxAnswer = 8 << 20

// maxErrorBody bounds the body of an event stream's refusal.
const maxErrorBody = 64 << 10

// Client calls the admin API at Base (http://host:port, or https://, without a
// trailing slash) with Token as a Bearer token ("" sends none). Its methods
// block until the answer is read, and are safe for concurrent use.
type Client struct {
	Base  string
	Token string
	// HTTP sends the calls; nil: http.DefaultClient.
	HTTP *http.Client
	// Timeout bounds each call but the event stream; 0: only the context does.
	Timeout time.Duration
	// MaxAnswer bounds the answer of a call; 0: DefaultMaxAnswer. A larger one
	// is an error.
	MaxAnswer int64
}

// Error is an answer of the API other than a 2xx: its status, the message of
// its JSON body {"error": "…"} ("" when it has none), and the body as it came
// (bounded).
type Error struct {
	Status  int
	Message string
	Body    []byte
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return "admin API: " + strconv.Itoa(e.Status) + " " + msg
}

// ErrAnswer is wrapped by the error of a 2xx answer that is not what the call
// answers (not JSON, or of another shape, or larger than MaxAnswer).
var ErrAnswer = errors.New("adminapi: unexpected answer")

// StatusOf is the status of the API's answer that err is, 0 when err is no
// *Error (the call could not be made, or its answer not read).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

type rawKey struct{}

// WithRaw returns a context whose calls keep the body of their answer, as the
// API sent it, in *raw (a script's --json prints it unchanged). It is set by the
// last call made with the context.
func WithRaw(ctx context.Context, raw *[]byte) context.Context {
	return context.WithValue(ctx, rawKey{}, raw)
}

// appPath is the API path of app id, with more after it.
func appPath(id string, more ...string) string {
	return "/api/apps/" + url.PathEscape(id) + strings.Join(more, "")
}

// Apps lists every app known to the routes or to the store.
func (c *Client) Apps(ctx context.Context) ([]reaper.AppView, error) {
	var out []reaper.AppView
	return out, c.Call(ctx, http.MethodGet, "/api/apps", nil, &out)
}

// App reads one app (a 404 *Error when no route and no record knows it).
func (c *Client) App(ctx context.Context, id string) (reaper.AppView, error) {
	var out reaper.AppView
	return out, c.Call(ctx, http.MethodGet, appPath(id), nil, &out)
}

// History reads a page of the app's history, newest first; page and size 0
// take the API's defaults (1 and 50).
func (c *Client) History(ctx context.Context, id string, page, size int) (reaper.HistoryPage, error) {
	q := url.Values{}
	if page != 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if size != 0 {
		q.Set("page_size", strconv.Itoa(size))
	}
	var out reaper.HistoryPage
	return out, c.Call(ctx, http.MethodGet, appPath(id, "/history", query(q)), nil, &out)
}

// Wakes reads the app's recent wakes, phase by phase; limit 0 takes the API's
// default (20).
func (c *Client) Wakes(ctx context.Context, id string, limit int) (reaper.WakesAnswer, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out reaper.WakesAnswer
	return out, c.Call(ctx, http.MethodGet, appPath(id, "/wakes", query(q)), nil, &out)
}

// Awake reads why the app is awake: who moved its idle clock, over every node.
func (c *Client) Awake(ctx context.Context, id string) (reaper.AwakeReport, error) {
	var out reaper.AwakeReport
	return out, c.Call(ctx, http.MethodGet, appPath(id, "/awake"), nil, &out)
}

// Prewake reads the app's learned visits and its next pre-wake.
func (c *Client) Prewake(ctx context.Context, id string) (reaper.PrewakeView, error) {
	var out reaper.PrewakeView
	return out, c.Call(ctx, http.MethodGet, appPath(id, "/prewake"), nil, &out)
}

// Wake asks for the app's wake, as a request would.
func (c *Client) Wake(ctx context.Context, id string, req reaper.ActionRequest) (reaper.WakeAnswer, error) {
	var out reaper.WakeAnswer
	return out, c.Call(ctx, http.MethodPost, appPath(id, "/_wake"), req, &out)
}

// Sleep puts the app to sleep now; the API refuses with 409 and why when it
// cannot go now, unless force.
func (c *Client) Sleep(ctx context.Context, id string, force bool, req reaper.ActionRequest) (reaper.SleepAnswer, error) {
	q := ""
	if force {
		q = "?force=true"
	}
	var out reaper.SleepAnswer
	return out, c.Call(ctx, http.MethodPost, appPath(id, "/_sleep", q), req, &out)
}

// Hold keeps the app awake for req.Duration (waking it), for req.Reason.
func (c *Client) Hold(ctx context.Context, id string, req reaper.ActionRequest) (reaper.HoldAnswer, error) {
	var out reaper.HoldAnswer
	return out, c.Call(ctx, http.MethodPost, appPath(id, "/_hold"), req, &out)
}

// Release ends the app's hold now (no active hold is not an error).
func (c *Client) Release(ctx context.Context, id string, req reaper.ActionRequest) (reaper.ReleaseAnswer, error) {
	var out reaper.ReleaseAnswer
	return out, c.Call(ctx, http.MethodDelete, appPath(id, "/_hold"), req, &out)
}

// Reset puts the app back to WaitingForInit.
func (c *Client) Reset(ctx context.Context, id string, req reaper.ActionRequest) (reaper.ResetAnswer, error) {
	var out reaper.ResetAnswer
	return out, c.Call(ctx, http.MethodPost, appPath(id, "/_reset"), req, &out)
}

// Savings reads what sleeping saved, per managed app and in total.
func (c *Client) Savings(ctx context.Context) (reaper.SavingsAnswer, error) {
	var out reaper.SavingsAnswer
	return out, c.Call(ctx, http.MethodGet, "/api/savings", nil, &out)
}

// TCPRoutes reads the node's TCP routes and their connections on it.
func (c *Client) TCPRoutes(ctx context.Context) ([]reaper.TCPRouteView, error) {
	var out []reaper.TCPRouteView
	return out, c.Call(ctx, http.MethodGet, "/api/tcp_routes", nil, &out)
}

// AppSavings reads one app's savings.
func (c *Client) AppSavings(ctx context.Context, id string) (reaper.SavingsView, error) {
	var out reaper.SavingsView
	return out, c.Call(ctx, http.MethodGet, appPath(id, "/savings"), nil, &out)
}

// Settings reads the cluster's settings (dry run, kill switch).
func (c *Client) Settings(ctx context.Context) (reaper.Settings, error) {
	var out reaper.Settings
	return out, c.Call(ctx, http.MethodGet, "/api/settings", nil, &out)
}

// PutSettings replaces the settings, and returns them as written.
func (c *Client) PutSettings(ctx context.Context, s reaper.Settings) (reaper.Settings, error) {
	var out reaper.Settings
	return out, c.Call(ctx, http.MethodPut, "/api/settings", s, &out)
}

// Cluster reads the cluster's status, each member probed when probe (2 s at
// most), else Raft's view alone. A single node answers 404.
func (c *Client) Cluster(ctx context.Context, probe bool) (leader.Status, error) {
	var out leader.Status
	return out, c.Call(ctx, http.MethodGet, "/api/cluster?probe="+strconv.FormatBool(probe), nil, &out)
}

// Triggers reads the wake triggers, each as the node that runs it knows it.
func (c *Client) Triggers(ctx context.Context) (trigger.Answer, error) {
	var out trigger.Answer
	return out, c.Call(ctx, http.MethodGet, trigger.AdminPath, nil, &out)
}

// Join adds a voter to the cluster, and returns the status after it.
func (c *Client) Join(ctx context.Context, m leader.MemberRequest) (leader.Status, error) {
	var out leader.Status
	return out, c.Call(ctx, http.MethodPost, "/api/cluster/members", m, &out)
}

// Remove removes member id from the cluster, and returns the status after it.
func (c *Client) Remove(ctx context.Context, id string) (leader.Status, error) {
	var out leader.Status
	return out, c.Call(ctx, http.MethodDelete, "/api/cluster/members/"+url.PathEscape(id), nil, &out)
}

// Events opens the node's event stream (server-sent events of reaper.Event)
// after the event lastID ("" for the kept recent ones first), and returns its
// body for the caller to read and close; Timeout does not apply. A refusal is
// an *Error.
func (c *Client) Events(ctx context.Context, lastID string) (io.ReadCloser, error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	resp, err := c.send(ctx, http.MethodGet, "/api/events", nil, h)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, errorOf(resp.StatusCode, body)
	}
	return resp.Body, nil
}

// Call sends method path (with its query) with in as its JSON body unless nil,
// and decodes a 2xx answer into out unless nil. Another answer is an *Error; an
// answer that cannot be decoded wraps ErrAnswer.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	resp, err := c.send(ctx, method, path, body, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	max := c.MaxAnswer
	if max <= 0 {
		max = DefaultMaxAnswer
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return errorOf(resp.StatusCode, raw[:min(int64(len(raw)), max)])
	}
	if int64(len(raw)) > max {
		return fmt.Errorf("%w from %s %s: larger than %d bytes", ErrAnswer, method, path, max)
	}
	if keep, ok := ctx.Value(rawKey{}).(*[]byte); ok {
		*keep = raw
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w from %s %s: %v", ErrAnswer, method, path, err)
	}
	return nil
}

// send sends the request, with body as JSON unless it is nil and the extra
// headers, and returns the answer for the caller to read and close.
func (c *Client) send(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, r)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Do(req)
}

// errorOf is the *Error of an answer that is not 2xx.
func errorOf(status int, body []byte) *Error {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return &Error{Status: status, Message: e.Error, Body: body}
}

// query is q as a URL's query ("?…"), "" when empty.
func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Groups lists the groups with their members.
func (c *Client) Groups(ctx context.Context) ([]reaper.GroupView, error) {
	var out []reaper.GroupView
	return out, c.Call(ctx, http.MethodGet, "/api/groups", nil, &out)
}

// Group returns one group.
func (c *Client) Group(ctx context.Context, id string) (reaper.GroupView, error) {
	var out reaper.GroupView
	return out, c.Call(ctx, http.MethodGet, "/api/groups/"+url.PathEscape(id), nil, &out)
}

// GroupAction runs an action (the path's last part: "_wake", "_sleep",
// "_hold"; DELETE "_hold" releases) on a group's id: each member's answer.
func (c *Client) GroupAction(ctx context.Context, method, id, action string, force bool, req reaper.ActionRequest) (reaper.GroupActionAnswer, error) {
	q := ""
	if force {
		q = "?force=true"
	}
	var out reaper.GroupActionAnswer
	return out, c.Call(ctx, method, appPath(id, "/"+action, q), req, &out)
}
