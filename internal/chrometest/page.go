package chrometest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ErrEval means the evaluated JavaScript threw, or its value could not be returned.
var ErrEval = errors.New("chrometest: evaluation failed")

// waitStep is the pause between two evaluations in WaitFor.
const waitStep = 20 * time.Millisecond

// Page is one tab of the browser, in a browser context of its own: pages share no cookies, cache or
// storage. Its methods may be used from several goroutines.
type Page struct {
	b         *Browser
	contextID string
	targetID  string
	sessionID string
}

// NewPage opens an about:blank tab in a fresh browser context and attaches to it. It fails the test if the
// browser refuses; the tab and its context are closed in t.Cleanup.
func (b *Browser) NewPage(t testing.TB) *Page {
	t.Helper()
	p := &Page{b: b}
	var bc struct {
		BrowserContextID string `json:"browserContextId"`
	}
	if err := b.Call("Target.createBrowserContext", map[string]any{"disposeOnDetach": true}, &bc); err != nil {
		t.Fatalf("chrometest: new browser context: %v", err)
	}
	p.contextID = bc.BrowserContextID
	t.Cleanup(func() {
		_ = b.Call("Target.disposeBrowserContext", map[string]any{"browserContextId": p.contextID}, nil)
	})

	var tg struct {
		TargetID string `json:"targetId"`
	}
	if err := b.Call("Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": p.contextID}, &tg); err != nil {
		t.Fatalf("chrometest: new tab: %v", err)
	}
	p.targetID = tg.TargetID
	t.Cleanup(func() { _ = b.Call("Target.closeTarget", map[string]any{"targetId": p.targetID}, nil) })

	var at struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.Call("Target.attachToTarget", map[string]any{"targetId": p.targetID, "flatten": true}, &at); err != nil {
		t.Fatalf("chrometest: attach to tab: %v", err)
	}
	p.sessionID = at.SessionID
	for _, c := range []struct {
		method string
		params any
	}{
		{"Page.enable", nil},
		{"Page.setLifecycleEventsEnabled", map[string]any{"enabled": true}},
	} {
		if err := p.Call(c.method, c.params, nil); err != nil {
			t.Fatalf("chrometest: %s: %v", c.method, err)
		}
	}
	return p
}

// Call sends a DevTools command to the page (Emulation.*, Network.*, ...) and decodes its result into
// result (unless nil). It blocks until the answer or CallTimeout; errors wrap ErrCDP or ErrClosed.
func (p *Page) Call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return p.b.conn.call(ctx, p.sessionID, method, params, result)
}

// Navigate loads url in the page and blocks until its load event (CallTimeout at most). An HTTP error
// status is not an error: the page shows what the server answered. Errors say the navigation failed (DNS,
// refused connection, ...) or timed out.
func (p *Page) Navigate(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	events, stop := p.b.conn.subscribe(p.sessionID, "Page.lifecycleEvent")
	defer stop()
	var nav struct {
		FrameID   string `json:"frameId"`
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	if err := p.b.conn.call(ctx, p.sessionID, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("chrometest: navigate to %s: %s", url, nav.ErrorText)
	}
	if nav.LoaderID == "" {
		return nil // same-document navigation (a fragment): nothing loads
	}
	for {
		select {
		case raw := <-events:
			var ev struct {
				FrameID  string `json:"frameId"`
				LoaderID string `json:"loaderId"`
				Name     string `json:"name"`
			}
			if json.Unmarshal(raw, &ev) == nil && ev.Name == "load" && ev.FrameID == nav.FrameID && ev.LoaderID == nav.LoaderID {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("chrometest: navigate to %s: no load event: %w", url, ctx.Err())
		}
	}
}

// Eval evaluates a JavaScript expression in the page, awaits it if it is a promise, and returns its value
// as JSON (null for undefined). It blocks until the value or CallTimeout. An exception, or a value that
// cannot be serialised, is an error wrapping ErrEval; a page that is reloading may also answer an error
// wrapping ErrCDP.
func (p *Page) Eval(js string) (json.RawMessage, error) {
	var res struct {
		Result struct {
			Type        string          `json:"type"`
			Value       json.RawMessage `json:"value"`
			Description string          `json:"description"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := p.Call("Runtime.evaluate", map[string]any{
		"expression": js, "returnByValue": true, "awaitPromise": true,
	}, &res)
	if err != nil {
		return nil, err
	}
	if e := res.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception != nil && e.Exception.Description != "" {
			msg = e.Exception.Description
		}
		return nil, fmt.Errorf("%w: %s", ErrEval, msg)
	}
	if len(res.Result.Value) == 0 {
		if res.Result.Type != "undefined" {
			// NaN, Infinity, -0 and the like have no JSON form.
			return nil, fmt.Errorf("%w: %s has no JSON value", ErrEval, res.Result.Description)
		}
		return json.RawMessage("null"), nil
	}
	return res.Result.Value, nil
}

// EvalInto evaluates js like Eval and decodes its value into v.
func (p *Page) EvalInto(js string, v any) error {
	raw, err := p.Eval(js)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: decode %s: %w", ErrEval, raw, err)
	}
	return nil
}

// WaitFor evaluates the JavaScript expression js until it is truthy, and fails the test if it is not
// within timeout. Errors in between (a page reloading, an element not there yet) count as "not yet"; the
// last one is reported on failure.
func (p *Page) WaitFor(t testing.TB, js string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	expr := "!!(" + js + "\n)"
	for {
		raw, err := p.Eval(expr)
		if err == nil && string(raw) == "true" {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("chrometest: %s not true within %v: %v", js, timeout, err)
			}
			t.Fatalf("chrometest: %s not true within %v", js, timeout)
		}
		time.Sleep(waitStep) // the pause between two polls of a deadline-bounded wait
	}
}

// Screenshot captures the visible part of the page as a PNG. It blocks until the image or CallTimeout.
func (p *Page) Screenshot() ([]byte, error) {
	var res struct {
		Data string `json:"data"`
	}
	if err := p.Call("Page.captureScreenshot", map[string]any{"format": "png"}, &res); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return nil, fmt.Errorf("chrometest: decode screenshot: %w", err)
	}
	return png, nil
}

// ScreenshotsEnv names the folder where SaveScreenshot keeps screenshots; when
// unset, they go to the test's artifact directory (kept with go test
// -artifacts).
const ScreenshotsEnv = "REAPER_SCREENSHOTS"

// SaveScreenshot captures the visible part of the page into name (a PNG) in
// $REAPER_SCREENSHOTS or the test's artifact directory, logs where, and
// returns the path. A failed capture or write fails the test.
func (p *Page) SaveScreenshot(t testing.TB, name string) string {
	t.Helper()
	png, err := p.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		dir = t.ArtifactDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
	return path
}
