package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

const e2eAdminToken = "e2e-admin-token-0123456789"

// adminGet reads path on the node's admin API with the token.
func adminGet(t *testing.T, p *reaperProc, path string, into any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.admin+path, nil)
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if into != nil {
		_ = json.NewDecoder(resp.Body).Decode(into)
	}
	return resp.StatusCode
}

// A held request's wake is timed phase by phase, from the ask to the held
// request's answer, and the event stream shows it as it happens.
func TestReaper_AWakeIsTimedPhaseByPhaseAndStreamed(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "300ms"`}
	cfg := strings.Replace(reaperConfig(a), "  shutdown_timeout: 5s\n", "  shutdown_timeout: 5s\n  admin_token: "+e2eAdminToken+"\n", 1)
	p := startReaper(t, t.TempDir(), cfg)
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "app status changed" && l["to"] == "Down" }, 10*time.Second)

	req, _ := http.NewRequest("GET", "http://"+p.admin+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	events := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- l
			}
		}
		close(events)
	}()

	resp, err := p.request("GET", "web.test", "/", nil, "Accept", "application/json")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("held request: %v %v", resp, err)
	}
	resp.Body.Close()
	if st := resp.Header.Get("Server-Timing"); !strings.Contains(st, "reaper-wake;dur=") || !strings.Contains(st, "reaper-boot;dur=") {
		t.Errorf("the held request's answer has Server-Timing %q; want the wake and its phases", st)
	}

	var got struct {
		Wakes []struct {
			Phases []struct {
				Phase   string  `json:"phase"`
				Seconds float64 `json:"seconds"`
			} `json:"phases"`
			Seconds float64 `json:"seconds"`
		} `json:"wakes"`
	}
	testwait.For(t, 5*time.Second, "the wake's first answer in the history", func() bool {
		adminGet(t, p, "/api/apps/web/wakes", &got)
		return len(got.Wakes) == 1 && len(got.Wakes[0].Phases) == 3
	})
	w := got.Wakes[0]
	var names []string
	for _, ph := range w.Phases {
		names = append(names, ph.Phase)
	}
	if strings.Join(names, ",") != "start_accepted,platform_up,first_answer" || w.Seconds < 0.3 || w.Seconds > 10 {
		t.Fatalf("wake %+v; want the three phases, at least the 300 ms boot in all", w)
	}
	var seen []string
	deadline := time.After(5 * time.Second)
	for len(seen) < 3 {
		select {
		case ev := <-events:
			if ev == "status" || ev == "wake" {
				seen = append(seen, ev)
			}
		case <-deadline:
			t.Fatalf("events seen %q; want the wake's status changes and its phases", seen)
		}
	}
	if strings.Join(seen, ",") != "status,status,wake" {
		t.Errorf("events %q; want status (WaitingForUp), status (Up), wake", seen)
	}
}
