package page

import (
	"context"
	_ "embed"
	"encoding/json"
	"io"
	"strings"

	"github.com/a-h/templ"
)

// waitingJS is the page's script: it follows the app's live progress stream, falls back to the
// reference's polling, and opens the app the moment it answers. It is a function expression, called
// with its configuration (scriptConfig).
//
//go:embed waiting.js
var waitingSource string

// waitingJS is waitingSource without its comment lines and indentation: every visitor downloads it.
var waitingJS = compactJS(waitingSource)

// compactJS drops the lines of src that hold only a comment, the indentation and the line breaks of the
// others. It is no minifier: it relies on the script ending every statement with a semicolon or a brace
// and keeping its comments on lines of their own.
func compactJS(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		b.WriteString(line)
		if !strings.HasSuffix(line, "{") && !strings.HasSuffix(line, ";") && !strings.HasSuffix(line, ",") && !strings.HasSuffix(line, "(") {
			b.WriteByte('\n')
		}
	}
	return strings.TrimSpace(b.String())
}

// hookTexts are the texts the script gives the element #clevercloud-reaper-status of a custom page, as
// the reference reaper words them: by status while the gateway answers in the app's place, and for the
// states "almost" (the app is up but does not answer yet) and "error".
var hookTexts = map[string]string{
	"WaitingForShutdown": "Finishing going to sleep",
	"Down":               "Asleep, wake up requested",
	"WaitingForUp":       "Starting",
	"Up":                 "Almost ready",
	StateAlmost:          "Almost ready",
	StateError:           "Error",
	"Error":              "Error",
}

// StatusText is the reference's wording of a status (as the script gives #clevercloud-reaper-status): the {{status}} of custom pages. An
// unknown status is given as it is.
func StatusText(status string) string {
	if t, ok := hookTexts[status]; ok {
		return t
	}
	return status
}

// scriptConfig is what the script is called with; JSON-encoded, so nothing in it can end the script
// element (encoding/json escapes <, > and &).
type scriptConfig struct {
	Poll      int64             `json:"poll"`
	ErrorPoll int64             `json:"errorPoll"`
	Events    string            `json:"events,omitempty"`
	Preview   bool              `json:"preview,omitempty"`
	Retry     int64             `json:"retry,omitempty"` // ms until a page refused by a wake limit reloads
	Sec       string            `json:"sec"`
	Hook      map[string]string `json:"hook"`
	P         json.RawMessage   `json:"p"`
}

// Script is the waiting page's script for w in the language of l, as one <script> element (with the
// nonce of ctx, if any): it follows w.EventsURL, falls back to polling every w.PollInterval (every
// w.ErrorPollInterval in Error), updates the page and the hooks of custom pages, and reloads the page the
// moment the app answers. A preview (w.Preview) only shows the progress.
func Script(w Waiting, l Locale) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, out io.Writer) error {
		cfg, err := json.Marshal(scriptConfig{
			Poll: w.pollMillis(), ErrorPoll: w.errorPollMillis(), Events: w.EventsURL, Preview: w.Preview,
			Retry: w.RetryAfter.Milliseconds(),
			Sec:   l.Messages.Seconds, Hook: hookTexts,
			P: appendProgressJSON(nil, w.Status, w.State(), w.Progress),
		})
		if err != nil {
			return err
		}
		b := make([]byte, 0, len(waitingJS)+len(cfg)+64)
		b = append(b, "<script"...)
		if n := templ.GetNonce(ctx); n != "" {
			b = append(b, ` nonce="`...)
			b = append(b, templ.EscapeString(n)...)
			b = append(b, '"')
		}
		b = append(b, ">"...)
		b = append(b, waitingJS...)
		b = append(b, '(')
		b = append(b, cfg...)
		b = append(b, ");</script>"...)
		_, err = out.Write(b)
		return err
	})
}

// NoScriptRefresh is the reload of a page whose browser runs no script: a <noscript> meta refresh after
// the poll interval of w's initial state. Nothing for a preview.
func NoScriptRefresh(w Waiting) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, out io.Writer) error {
		if w.Preview {
			return nil
		}
		// refreshSeconds is a number: nothing to escape.
		_, err := io.WriteString(out, `<noscript><meta http-equiv="refresh" content="`+w.refreshSeconds()+`"></noscript>`)
		return err
	})
}
