package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// waitPageConfig is reaperConfig with an admin token on the node.
func waitPageConfig(apps ...app) string {
	return strings.Replace(reaperConfig(apps...), "  admin_listen: 127.0.0.1:0\n",
		"  admin_listen: 127.0.0.1:0\n  admin_token: e2e-preview-token-42\n", 1)
}

// The waiting page's live progress, with the real binary and a real app: the
// stream follows the wake to "ready", and the request made right then is the
// app's, not the waiting page again.
func TestWaitingPage_EventsEndReadyAndTheReloadReachesTheApp(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "1s"`}
	p := startReaper(t, t.TempDir(), waitPageConfig(a))
	p.waitLog(func(l map[string]any) bool { return l["to"] == "Down" }, 10*time.Second)

	resp, err := p.request("GET", "web.test", "/", nil, "Accept", "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 503 || !strings.Contains(body, `"events":"/.well-known/reaper/events"`) {
		t.Fatalf("waiting page: %d, without its events URL", resp.StatusCode)
	}
	resp, err = p.request("GET", "web.test", "/.well-known/reaper/events", nil, "Accept", "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %v", resp.StatusCode, resp.Header)
	}
	var events []string
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			last = nil
			if err := json.Unmarshal([]byte(data), &last); err != nil {
				t.Fatalf("data %q: %v", data, err)
			}
		}
	}
	if len(events) < 2 || events[len(events)-1] != "ready" || last["status"] != "Up" || last["up_ms"] == nil {
		t.Fatalf("events %v, last %v; want state events, then ready once up", events, last)
	}
	resp, err = p.request("GET", "web.test", "/", nil, "Accept", "text/html")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || resp.Header.Get("CleverCloud-Reaper-Status") != "" {
		t.Errorf("the page's reload right after ready: %d %v %.200s; want the app's answer", resp.StatusCode, resp.Header, body)
	}
	if got := starts(p, "web"); got != 1 {
		t.Errorf("web starts = %d, want 1", got)
	}
}

// The preview shows the page for the admin token, wakes nothing, and the token
// shows nowhere.
func TestPreview_WithTheAdminToken(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t)}
	p := startReaper(t, t.TempDir(), waitPageConfig(a))
	p.waitLog(func(l map[string]any) bool { return l["to"] == "Down" }, 10*time.Second)
	const path = "/.well-known/reaper/preview?status=WaitingForUp&lang=fr"
	resp, err := p.request("GET", "web.test", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "e2e-preview-token-42") {
		t.Errorf("without the token: %d %s", resp.StatusCode, body)
	}
	resp, err = p.request("GET", "web.test", path, nil, "Authorization", "Bearer e2e-preview-token-42")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(body, `<html lang="fr" dir="ltr" data-state="waiting" data-status="WaitingForUp"`) ||
		!strings.Contains(body, `"preview":true`) || strings.Contains(body, "e2e-preview-token-42") {
		t.Errorf("with the token: %d %.300s", resp.StatusCode, body)
	}
	if got := starts(p, "web"); got != 0 {
		t.Errorf("the preview woke the app (%d starts)", got)
	}
	if strings.Contains(p.logText(), "e2e-preview-token-42") {
		t.Error("the admin token is in the log")
	}
}
