package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/chrometest"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// A real browser through nginx in front of the forward-auth listener: the
// waiting page, which polls (nginx's auth_request relays no stream), then the
// app. The screenshot of the page goes to $REAPER_SCREENSHOTS, else to the
// test's artifact directory.
func TestForwardAuth_BrowserThroughNginxGetsThePageThenTheApp(t *testing.T) {
	browserThrough(t, "nginx", "poll", func(t *testing.T, auth string, web app) string { return nginxFront(t, auth, web) })
}

// Through Caddy, the page's live progress comes through too: Caddy relays
// reaper's streamed answer as it comes.
func TestForwardAuth_BrowserThroughCaddyGetsThePageThenTheApp(t *testing.T) {
	browserThrough(t, "caddy", "events", func(t *testing.T, auth string, web app) string {
		listen := freeport.Addr(t)
		startCaddy(t, listen, recipeFor(t, docBlock(t, "caddyfile"), "http://"+listen, web.addr, auth, listen))
		return listen
	})
}

// browserThrough runs the browser check through the proxy front starts; live
// is how the page must follow the wake (its data-live).
func browserThrough(t *testing.T, proxy, live string, front func(t *testing.T, auth string, web app) string) {
	b := chrometest.Start(t)
	web := app{id: "web", addr: freeport.Addr(t), flags: `"--boot-delay", "3s"`, plugin: `allow_waiting_page: true`}
	auth := freeport.Addr(t)
	cfg := reaperConfig(web)
	// The browser asks for 127.0.0.1:port, which nginx forwards as the host.
	cfg = strings.Replace(cfg, "domains: [web.test]", "domains: [web.test, 127.0.0.1]", 1)
	cfg = strings.Replace(cfg, "  data_dir:", "  auth_listen: "+auth+"\n  data_dir:", 1)
	p := startReaper(t, t.TempDir(), cfg)
	testwait.For(t, 10*time.Second, "web Down", func() bool { return downs(p) >= 1 })
	addr := front(t, auth, web)

	pg := b.NewPage(t)
	if err := pg.Navigate("http://" + addr + "/"); err != nil {
		t.Fatal(err)
	}
	pg.WaitFor(t, `document.documentElement.dataset.live === "`+live+`"`, 10*time.Second)
	pg.SaveScreenshot(t, "forwardauth-"+proxy+"-waiting.png")
	pg.WaitFor(t, `document.body !== null && /"name":\s*"web"/.test(document.body.innerText)`, 30*time.Second)
	if got := starts(p, "web"); got != 1 {
		t.Errorf("web starts = %d, want 1", got)
	}
}
