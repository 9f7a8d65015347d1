package page

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"html/template"

	"github.com/a-h/templ"
)

// Fields are what an operator's own waiting page (an html/template, see package templates) can show.
// The reference's placeholders stand for some of them: {{route_name}} for .RouteName, {{app_name}} for
// .AppName, {{app_id}} for .AppID, {{status}} for .StatusText, {{request_id}} for .RequestID and
// {{node}} for .Node. The template escapes each value for where it is written (text, attribute, URL,
// script, style).
type Fields struct {
	RouteName string
	// AppName is the app's name on its platform, else the route's name.
	AppName string
	AppID   string
	// Status is the app's status (WaitingForShutdown, Down, WaitingForUp, Up, Error); StatusText the
	// reference's wording of it ("Asleep, wake up requested"); State the page's state (waiting, almost,
	// error).
	Status, StatusText, State string
	RequestID                 string
	// Node is the node that answered.
	Node string
	// Lang and Dir are the visitor's language among those of the built-in page (its tag, as for <html
	// lang>) and its direction (ltr or rtl); Messages the built-in page's texts in that language, and
	// Title and ErrorTitle its headings with the route's name in (while it wakes, once it failed).
	Lang, Dir         string
	Messages          Messages
	Title, ErrorTitle string
	// ETA is the app's usual boot time; Phases the wake's phases, in order.
	ETA    ETA
	Phases []Phase

	// The pieces of the built-in page, ready to put in: Script is reaper's script (with the <noscript>
	// refresh), added before the last </body> of a page that does not write it itself; Style is the
	// built-in page's <style> element, for the <head>; Progress is its progress section (the ETA, its
	// bar and the phases), which needs Style; Spinner its spinner.
	Script, Style, Progress, Spinner template.HTML
}

// ETA is the usual boot time of an app, for templates.
type ETA struct {
	// Known is false until a boot was measured.
	Known bool
	// Seconds is the usual boot time, rounded up; Samples how many boots it rests on.
	Seconds, Samples int
	// Late says the wake runs longer than usual; Percent is how far it went against the usual time.
	Late    bool
	Percent int
}

// Phase is one phase of a wake, for templates.
type Phase struct {
	// Name is asked, accepted, up or ready; Label its text in the visitor's language.
	Name, Label string
	// Reached says the wake got there; Time is when, counted from the ask ("0.1 s"), if known.
	Reached bool
	Time    string
}

// NewFields gathers the fields of w for a visitor whose browser sends acceptLanguage, the pieces of the
// built-in page rendered with the nonce of ctx, if any. An error wraps ErrRender.
func NewFields(ctx context.Context, w Waiting, acceptLanguage string) (Fields, error) {
	l := LocaleFor(acceptLanguage)
	f := Fields{
		RouteName: w.RouteName, AppName: cmp.Or(w.AppName, w.RouteName), AppID: w.AppID,
		Status: w.Status, StatusText: StatusText(w.Status), State: w.State(),
		RequestID: w.RequestID, Node: w.Node,
		Lang: l.Tag.String(), Dir: l.Dir, Messages: l.Messages,
		Title:      fill(l.Messages.Title, PlaceholderApp, w.DisplayName(l.Messages.DefaultApp)),
		ErrorTitle: fill(l.Messages.ErrorTitle, PlaceholderApp, w.DisplayName(l.Messages.DefaultApp)),
		ETA: ETA{Known: w.Progress.ETA > 0, Seconds: w.Progress.ETASeconds(), Samples: w.Progress.Samples,
			Late: w.Progress.Late(), Percent: w.Progress.Percent()},
	}
	for _, ph := range phases(l) {
		f.Phases = append(f.Phases, Phase{Name: ph.name, Label: ph.label, Reached: w.Progress.reached(ph.name),
			Time: w.Progress.phaseTime(ph.name, l)})
	}
	for _, piece := range []struct {
		to *template.HTML
		c  templ.Component
	}{
		{&f.Script, templ.Join(NoScriptRefresh(w), Script(w, l))},
		{&f.Style, Style()},
		{&f.Progress, ProgressSection(w, l)},
		{&f.Spinner, Spinner()},
	} {
		var buf bytes.Buffer
		if err := piece.c.Render(ctx, &buf); err != nil {
			return Fields{}, fmt.Errorf("%w: %w", ErrRender, err)
		}
		// Rendered by our own components, which escape what they hold.
		*piece.to = template.HTML(buf.String())
	}
	return f, nil
}
