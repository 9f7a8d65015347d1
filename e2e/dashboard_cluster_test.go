package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// The dashboard of a three-node cluster: a follower's dashboard shows every
// member, the leader and the requests held on another node, and actions posted
// on followers reach the leader.
func TestDashboard_ClusterAnyNodeShowsTheClusterAndActs(t *testing.T) {
	opts := clusterClever()
	opts.BootTime = 4 * time.Second // long enough to see a held request on the dashboard
	e := newCluster(t, opts, 3, clusterApp{name: "web", state: fakeclever.StateShouldBeDown})
	lead := e.waitLeader(e.nodes, 30*time.Second, "")
	e.waitAppStatus(e.nodes, "web", "Down", 30*time.Second)
	var followers []*clusterNode
	for _, n := range e.nodes {
		if n.id != lead.ID {
			followers = append(followers, n)
		}
	}
	f1, f2 := followers[0], followers[1]
	b := newBrowserClient(t)
	b.signIn(t, "http://"+f1.apiAddr, clusterAdminToken)

	page := b.get(t, "http://"+f1.apiAddr+"/")
	for _, n := range e.nodes {
		if !strings.Contains(page, "<th scope=\"row\">"+n.id) {
			t.Errorf("%s's dashboard does not list member %s", f1.id, n.id)
		}
	}
	if !regexp.MustCompile(`<dt>Leader</dt><dd><b>` + lead.ID + `</b>`).MatchString(page) {
		t.Errorf("%s's dashboard does not name %s as the leader", f1.id, lead.ID)
	}
	if !strings.Contains(page, `data-app="`+e.ids["web"]+`"`) || !strings.Contains(page, "valkey at ") {
		t.Errorf("%s's dashboard does not show the app and the store", f1.id)
	}

	// A request held on the other follower shows on this one's dashboard.
	held := make(chan heldResult, 1)
	go func() { held <- e.get(f2, "web", nil) }()
	want := `<span class="muted">` + f2.id + `</span> 1</span>`
	testwait.For(t, 20*time.Second, "the request held on "+f2.id+" shown on "+f1.id, func() bool {
		return strings.Contains(b.get(t, "http://"+f1.apiAddr+"/"), want)
	})
	if r := <-held; r.code != 200 {
		t.Errorf("the held request got %d %q", r.code, r.body)
	}
	e.waitAppStatus(e.nodes, "web", "Up", 30*time.Second)

	// Sleep now, posted on a follower, is done by the leader; so is Wake.
	base := "http://" + f2.apiAddr + "/apps/" + url.PathEscape(e.ids["web"])
	csrf := b.csrf(t, "http://"+f2.apiAddr+"/") // the cookie is good on every node: same token
	var last string
	testwait.For(t, 30*time.Second, "Sleep now accepted on "+f2.id, func() bool {
		// 409 while the nodes still count the held request as open (they flush their counts).
		code, body := b.post(t, base+"/sleep", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
		last = body
		if code != 200 && (code != 409 || !strings.Contains(body, "open on the app")) {
			t.Fatalf("sleep on %s: %d %s", f2.id, code, body)
		}
		return code == 200
	})
	if !strings.Contains(last, "goes to sleep") {
		t.Errorf("sleep on %s says %s", f2.id, last)
	}
	e.waitAppStatus(e.nodes, "web", "Down", 30*time.Second)
	if code, body := b.post(t, base+"/wake", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != 200 {
		t.Fatalf("wake on %s: %d %s", f2.id, code, body)
	}
	e.waitAppStatus(e.nodes, "web", "Up", 30*time.Second)
	if n := e.fake.Starts(e.ids["web"]); n != 2 {
		t.Errorf("the platform saw %d starts, want 2 (the held request's wake, then Wake)", n)
	}

	// The event stream answers a session on a follower.
	req, _ := http.NewRequest("GET", "http://"+f1.apiAddr+"/api/events", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("/api/events with the session on %s: %d %s", f1.id, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// browserClient is an HTTP client with cookies, as a browser without scripts.
type browserClient struct{ c *http.Client }

func newBrowserClient(t *testing.T) *browserClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browserClient{c: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

func (b *browserClient) get(t *testing.T, u string) string {
	t.Helper()
	resp, err := b.c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, resp)
}

// csrf is the CSRF token of the page's forms.
func (b *browserClient) csrf(t *testing.T, u string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(b.get(t, u))
	if m == nil {
		t.Fatalf("no CSRF token in %s", u)
	}
	return m[1]
}

// post posts a form as the dashboard's script does, and returns the answer.
func (b *browserClient) post(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// signIn fills the sign-in form of the dashboard at base.
func (b *browserClient) signIn(t *testing.T, base, token string) {
	t.Helper()
	resp, err := b.c.PostForm(base+"/login", url.Values{"csrf": {b.csrf(t, base+"/login")}, "token": {token}, "name": {"e2e"}})
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/" || !strings.Contains(body, "Sign out") {
		t.Fatalf("sign-in on %s: %d at %s", base, resp.StatusCode, resp.Request.URL)
	}
}
