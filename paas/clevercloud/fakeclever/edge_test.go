package fakeclever

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestEdge_AnswersForTheAppOrSaysNoInstance(t *testing.T) {
	clk := newClock()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("backend " + r.URL.Path))
	}))
	t.Cleanup(backend.Close)
	f := startFake(t, Options{Now: clk.Now, BootTime: time.Second})
	def := f.AddApp(App{Owner: testOrga})
	own := f.AddApp(App{Owner: testOrga, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound) // the app's own 404: no Upgrade header
	})})
	f.AddApp(App{Owner: testOrga, BackendURL: backend.URL, VHosts: []string{"Shop.Example.com"}})
	down := f.AddApp(App{Owner: testOrga, State: StateShouldBeDown})
	f.AddVHost(down.ID, "down.example.com")

	edge := func(host string) answer { return call(t, "GET", f.EdgeURL()+"/p?q=1", "", "Host", host) }

	a := edge(DefaultDomain(def.ID))
	var body struct {
		AppID   string `json:"app_id"`
		Started string `json:"instance_started_at"`
		Path    string
	}
	a.json(t, &body)
	st, _ := f.App(def.ID)
	if a.status != 200 || body.AppID != def.ID || body.Path != "/p" || body.Started != st.InstanceStartedAt.Format(time.RFC3339Nano) {
		t.Errorf("default handler: %d %s (started %v)", a.status, a.body, st.InstanceStartedAt)
	}
	if a := edge(strings.ToUpper(DefaultDomain(own.ID)) + ":443"); a.status != 404 || a.header.Get(UpgradeHeader) != "" {
		t.Errorf("own handler: %d %v", a.status, a.header)
	}
	if a := edge("shop.example.com."); a.status != http.StatusTeapot || string(a.body) != "backend /p" {
		t.Errorf("backend URL via vhost: %d %s", a.status, a.body)
	}
	for _, h := range []string{DefaultDomain(down.ID), "down.example.com"} {
		if a := edge(h); a.status != 404 || a.header.Get(UpgradeHeader) != "true" {
			t.Errorf("down app at %s: %d %v", h, a.status, a.header)
		}
	}
	if a := edge("unknown.example.com"); a.status != 404 || a.header.Get(UpgradeHeader) != "" {
		t.Errorf("unknown domain: %d %v", a.status, a.header)
	}

	// The domain answers again once the app is up after a start.
	if err := f.Console(down.ID).Start(); err != nil {
		t.Fatal(err)
	}
	if a := edge("down.example.com"); a.status != 404 || a.header.Get(UpgradeHeader) != "true" {
		t.Errorf("booting app: %d %v", a.status, a.header)
	}
	clk.Add(time.Second)
	if a := edge("down.example.com"); a.status != 200 {
		t.Errorf("woken app: %d", a.status)
	}
	calls := f.EdgeCalls()
	if len(calls) != 8 || calls[len(calls)-1].App != down.ID || calls[len(calls)-1].Status != 200 {
		t.Errorf("edge calls: %+v", calls)
	}
	if len(f.Calls()) != 0 {
		t.Errorf("edge requests recorded as API calls")
	}
}

func TestEdge_AppListenerAnswersWhateverTheHost(t *testing.T) {
	f := startFake(t, Options{})
	before := f.AddApp(App{Owner: testOrga, EdgeAddr: "127.0.0.1:0"})
	after := f.AddApp(App{Owner: testOrga, EdgeAddr: "127.0.0.1:0", State: StateShouldBeDown})
	for _, c := range []struct {
		id   string
		want int
	}{{before.ID, 200}, {after.ID, 404}} {
		u := f.AppEdgeURL(c.id)
		if u == "" {
			t.Fatalf("%s has no edge URL", c.id)
		}
		if a := call(t, "GET", u+"/", "", "Host", "anything.example"); a.status != c.want {
			t.Errorf("%s: %d, want %d", c.id, a.status, c.want)
		}
	}
}
