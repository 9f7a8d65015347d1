package fakeclever

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func send(t *testing.T, method, url, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestAdmin_ControlEndpoints(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{Now: clk.Now, StopLinger: linger})
	adm := f.AdminURL() + "/_fake"

	if a := send(t, "GET", adm+"/", ""); a.status != 200 || !strings.Contains(string(a.body), "/_fake/faults") {
		t.Errorf("help: %d %s", a.status, a.body)
	}
	a := send(t, "POST", adm+"/apps", `{"id":"`+testApp+`","owner":"`+testOrga+`","name":"hello"}`)
	var st Status
	a.json(t, &st)
	if a.status != 201 || st.ID != testApp || st.State != StateShouldBeUp || st.Domain != DefaultDomain(testApp) {
		t.Fatalf("add: %d %s", a.status, a.body)
	}
	for body, want := range map[string]string{
		`{"state":"NOPE"}`:  "unknown state",
		`{"owner":"bob"}`:   "neither orga_",
		`{"colour":"blue"}`: "unknown field",
	} {
		a := send(t, "POST", adm+"/apps", body)
		if a.status != 400 || !strings.Contains(string(a.body), want) {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}

	if a := send(t, "POST", adm+"/apps/"+testApp+"/console/stop", ""); a.status != 200 {
		t.Fatalf("console stop: %d %s", a.status, a.body)
	}
	if a := send(t, "POST", adm+"/apps/"+testApp+"/console/stop", ""); a.status != http.StatusConflict {
		t.Errorf("second stop: %d %s", a.status, a.body)
	}
	clk.Add(linger)
	send(t, "GET", adm+"/apps/"+testApp, "").json(t, &st)
	if st.State != StateShouldBeDown {
		t.Errorf("after console stop: %+v", st)
	}
	if a := send(t, "POST", adm+"/apps/"+testApp+"/console/state?state=MODERATED", ""); a.status != 200 || !strings.Contains(string(a.body), StateModerated) {
		t.Errorf("state: %d %s", a.status, a.body)
	}
	if a := send(t, "POST", adm+"/apps/app_nope/console/start", ""); a.status != 404 {
		t.Errorf("unknown app: %d", a.status)
	}
	if a := send(t, "POST", adm+"/apps/"+testApp+"/console/dance", ""); a.status != 404 {
		t.Errorf("unknown action: %d", a.status)
	}

	if a := send(t, "POST", adm+"/faults", `{"app":"","kind":"too_many_429","count":1,"retry_after":"3s"}`); a.status != 204 {
		t.Fatalf("inject: %d %s", a.status, a.body)
	}
	if a := call(t, "GET", f.BridgeURL()+"/v2/summary", bearer(f)); a.status != 429 || a.header.Get("Retry-After") != "3" {
		t.Errorf("injected fault: %d %v", a.status, a.header)
	}
	for _, body := range []string{`{"kind":"nope"}`, `{"kind":"5xx","status":404}`, `{"kind":"slow","delay":"soon"}`} {
		if a := send(t, "POST", adm+"/faults", body); a.status != 400 {
			t.Errorf("%s: %d", body, a.status)
		}
	}
	send(t, "POST", adm+"/faults", `{"kind":"5xx"}`)
	if a := send(t, "DELETE", adm+"/faults", ""); a.status != 204 {
		t.Errorf("clear: %d", a.status)
	}
	if a := call(t, "GET", f.BridgeURL()+"/v2/summary", bearer(f)); a.status != 200 {
		t.Errorf("after clear: %d", a.status)
	}
	var calls []Call
	send(t, "GET", adm+"/calls?host=bridge", "").json(t, &calls)
	if len(calls) != 2 || calls[0].Status != 429 || calls[0].Fault != string(FaultTooMany429) {
		t.Errorf("calls: %+v", calls)
	}
	var apps []Status
	send(t, "GET", adm+"/apps", "").json(t, &apps)
	if len(apps) != 1 {
		t.Errorf("apps: %+v", apps)
	}
}
