// Package page renders the HTML pages that reaper answers in place of an app: for now the waiting page a
// browser gets while the app it asked for is asleep. Pages are templ components. An operator's own
// waiting page (package templates) gets the same pieces as fields (Fields): the script, the style, the
// progress section.
//
// The waiting page is self-contained: no external script, stylesheet, font or image, light and dark from
// prefers-color-scheme, 32 languages chosen from Accept-Language (language.go; their texts in messages.go,
// messages_europe.go, messages_asia.go and messages_rtl.go, right to left for Arabic, Hebrew, Persian and
// Urdu). It shows the wake's phases and the
// app's usual boot time, follows the app's live progress stream (server-sent events) and reloads itself
// the moment requests go through to the app; without the stream it polls its own URL with a HEAD request
// marked `CleverCloud-Reaper: poll` and reloads itself as soon as the app itself answers.
package page

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/a-h/templ"
)

// Default poll intervals of the waiting page, and the bounds any configured interval is clamped to.
const (
	DefaultPollInterval      = 5 * time.Second
	DefaultErrorPollInterval = 30 * time.Second
	// MinPollInterval keeps a misconfiguration from making every waiting browser hammer the gateway.
	MinPollInterval = 50 * time.Millisecond
	// MaxPollInterval stays far below the largest delay JavaScript's setTimeout accepts (about 24.8
	// days), beyond which browsers fire the timer at once.
	MaxPollInterval = time.Hour
)

// States of the page, exposed as the data-state attribute of <html> for CSS and tests.
const (
	StateWaiting = "waiting" // the gateway answers the polls: the app sleeps, goes to sleep or wakes up
	StateAlmost  = "almost"  // the gateway lets polls through but the app does not answer yet
	StateError   = "error"   // the app could not be started; the page polls every ErrorPollInterval
	StateLimited = "limited" // a wake limit refused the wake (Waiting.RetryAfter); the page reloads after it
)

// ErrRender means the page could not be rendered; it wraps the cause.
var ErrRender = errors.New("page: render waiting page")

// Waiting is what the waiting page shows. Every string is escaped when rendered.
type Waiting struct {
	// RouteName names the route: the heading of the built-in page shows it ("shop is waking up"), as the
	// reference's default page does, since it is the name the visitor's request went to. When it is empty
	// the heading shows AppName; when both are, the page says "the application" in its language.
	RouteName string
	// AppName is the app's name on its platform; custom pages get it as {{app_name}} (Fields.AppName).
	AppName string
	// AppID identifies the app for operators' templates and dashboards; the default page does not show
	// it, since a visitor has no use for it.
	AppID string
	// Status is the reaper status of the app: WaitingForShutdown, Down, WaitingForUp or Error. It picks
	// the initial state; the page updates it from the polls.
	Status string
	// RequestID and Node go into the footer, so a screenshot a user sends can be traced to a log line.
	RequestID, Node string
	// PollInterval is the time between two polls (0 → DefaultPollInterval); ErrorPollInterval the time
	// between two polls once the app is in Error (0 → DefaultErrorPollInterval). Both are clamped to
	// [MinPollInterval, MaxPollInterval].
	PollInterval, ErrorPollInterval time.Duration
	// Progress is how far the wake went when the page was rendered, and the app's usual boot time.
	Progress Progress
	// EventsURL is the path of the app's live progress stream (server-sent events, see AppendEvent):
	// the script follows it, and polls only when it fails. Empty: the script only polls.
	EventsURL string
	// Preview renders the page for a person to look at: it neither polls, nor follows the stream, nor
	// reloads (no meta refresh either).
	Preview bool
	// RetryAfter, when more than 0, says that a wake limit refused to wake the app for this visitor (too
	// many wakes from its address): the page says so and when it tries again, and reloads itself after
	// RetryAfter instead of following a wake (StateLimited).
	RetryAfter time.Duration
}

// RenderWaiting renders the waiting page in the best language for acceptLanguage (an Accept-Language
// header value, possibly empty or malformed: English then) into a buffer and returns the bytes, so a failed
// render never leaves half a page on the wire. It does not block beyond the rendering itself and can be
// called concurrently. If ctx carries a CSP nonce (templ.WithNonce), the inline style and script carry it.
// An error wraps ErrRender.
func RenderWaiting(ctx context.Context, w Waiting, acceptLanguage string) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(8 << 10)
	if err := WaitingPage(w, LocaleFor(acceptLanguage)).Render(ctx, &buf); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRender, err)
	}
	return buf.Bytes(), nil
}

// State is the initial data-state of the page for the status: StateLimited when a wake limit refused the
// wake, else StateError for Error, StateAlmost for Up (the gateway sees the app up, yet answered in its
// place), StateWaiting for every other status.
func (w Waiting) State() string {
	if w.RetryAfter > 0 {
		return StateLimited
	}
	switch w.Status {
	case "Error":
		return StateError
	case "Up":
		return StateAlmost
	default:
		return StateWaiting
	}
}

// DisplayName is the name the page's heading shows: RouteName, else AppName, else fallback.
func (w Waiting) DisplayName(fallback string) string {
	switch {
	case w.RouteName != "":
		return w.RouteName
	case w.AppName != "":
		return w.AppName
	default:
		return fallback
	}
}

// pollMillis is the normal poll interval in milliseconds, as the page script uses it.
func (w Waiting) pollMillis() int64 {
	return clampInterval(w.PollInterval, DefaultPollInterval).Milliseconds()
}

// errorPollMillis is the poll interval in Error, in milliseconds.
func (w Waiting) errorPollMillis() int64 {
	return clampInterval(w.ErrorPollInterval, DefaultErrorPollInterval).Milliseconds()
}

// refreshSeconds is the delay of the <noscript> meta refresh: the poll interval of the initial state,
// rounded up to whole seconds since that is all a meta refresh takes.
func (w Waiting) refreshSeconds() string {
	if w.RetryAfter > 0 {
		return w.retrySeconds()
	}
	d := clampInterval(w.PollInterval, DefaultPollInterval)
	if w.State() == StateError {
		d = clampInterval(w.ErrorPollInterval, DefaultErrorPollInterval)
	}
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

// retrySeconds is RetryAfter in whole seconds, rounded up.
func (w Waiting) retrySeconds() string {
	return strconv.Itoa(int(math.Ceil(w.RetryAfter.Seconds())))
}

// etaState is the initial data-eta of the page: "none" while no boot was measured (the status line then
// says how long a wake may take), "late" when the wake runs longer than usual, else "usual".
func etaState(p Progress) string {
	switch {
	case p.ETA <= 0:
		return "none"
	case p.Late():
		return "late"
	}
	return "usual"
}

// phase is one entry of the page's list of phases.
type phase struct{ name, label string }

// phases lists the phases of a wake in order, labelled in the language of l.
func phases(l Locale) [4]phase {
	m := l.Messages
	return [4]phase{{PhaseAsked, m.PhaseAsked}, {PhaseAccepted, m.PhaseAccepted}, {PhaseUp, m.PhaseUp}, {PhaseReady, m.PhaseReady}}
}

// nonceAttr is the nonce attribute of the inline style and script when ctx carries a CSP nonce, else none.
func nonceAttr(ctx context.Context) templ.Attributes {
	if n := templ.GetNonce(ctx); n != "" {
		return templ.Attributes{"nonce": n}
	}
	return nil
}

func clampInterval(d, def time.Duration) time.Duration {
	switch {
	case d <= 0:
		return def
	case d < MinPollInterval:
		return MinPollInterval
	case d > MaxPollInterval:
		return MaxPollInterval
	default:
		return d
	}
}
