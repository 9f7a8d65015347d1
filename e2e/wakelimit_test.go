package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// node.max_wakes_per_client, as the binary reads it: past the client's budget
// a request that would start a wake gets 429 with Retry-After (a browser: the
// waiting page saying so), and the app is not started.
func TestReaper_WakeLimitPerClient(t *testing.T) {
	var apps []app
	for _, id := range []string{"a1", "a2", "a3"} {
		apps = append(apps, app{id: id, addr: freeport.Addr(t), plugin: "api_behavior: unavailable"})
	}
	cfg := strings.Replace(reaperConfig(apps...), "max_wakes_per_client: 0", "max_wakes_per_client: 2", 1)
	p := startReaper(t, t.TempDir(), cfg)
	testwait.For(t, 10*time.Second, "the three apps Down", func() bool {
		n := 0
		for _, l := range p.logs() {
			if l["to"] == "Down" {
				n++
			}
		}
		return n == 3
	})

	for _, id := range []string{"a1", "a2"} {
		code, _, _ := getApp(t, p, id+".test")
		if code != 503 {
			t.Fatalf("%s: %d, want 503 (waking)", id, code)
		}
	}
	code, _, h := getApp(t, p, "a3.test")
	if code != 429 || h.Get("Retry-After") != "30" {
		t.Fatalf("the third wake in a minute: %d Retry-After %q, want 429, 30", code, h.Get("Retry-After"))
	}
	resp, err := p.request("GET", "a3.test", "/", nil, "Accept", "text/html", "Accept-Language", "de")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 429 || !strings.Contains(body, `data-state="limited"`) ||
		!strings.Contains(body, "Von Ihrer Adresse wurden zu viele Weckvorgänge angefordert.") {
		t.Errorf("a browser past the limit: %d %.300s", resp.StatusCode, body)
	}
	testwait.For(t, 15*time.Second, "a1 and a2 woken", func() bool { return starts(p, "a1") == 1 && starts(p, "a2") == 1 })
	if n := starts(p, "a3"); n != 0 {
		t.Errorf("a3 was started %d times past the limit", n)
	}
	if !strings.Contains(p.logText(), "wakes refused by the wake limits") {
		t.Error("the refusal is not logged")
	}
}
