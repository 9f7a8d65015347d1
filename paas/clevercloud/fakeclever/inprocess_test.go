package fakeclever

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// The in-process transport serves each host as its listener would, in a bubble.
func TestTransport_ServesTheAPIInProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := New(Options{DeployDelay: time.Minute, BootTime: time.Minute})
		a := f.AddApp(App{Owner: testOrga, State: StateShouldBeDown})
		hc := &http.Client{Transport: f.Transport()}
		get := func(method, url, auth string) int {
			t.Helper()
			req, _ := http.NewRequest(method, url, nil)
			req.Header.Set("Authorization", auth)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode
		}
		app := "/v2/organisations/" + testOrga + "/applications/" + a.ID
		if st := get("GET", "https://api-bridge.clever-cloud.com"+app, bearer(f)); st != 200 {
			t.Errorf("bridge with the token: %d", st)
		}
		// The API host takes OAuth only, as its listener does.
		if st := get("GET", "https://api.clever-cloud.com"+app, bearer(f)); st != 401 {
			t.Errorf("API host with a token: %d, want 401", st)
		}
		if st := get("GET", "https://api.clever-cloud.com"+app, oauthHeader(f.OAuth())); st != 200 {
			t.Errorf("API host with OAuth: %d", st)
		}
		// Faults and the platform's timing apply, on the bubble's clock.
		f.Inject("", Fault{Kind: FaultTooMany429, Count: 1})
		if st := get("POST", "https://api-bridge.clever-cloud.com"+app+"/instances", bearer(f)); st != 429 {
			t.Errorf("faulted start: %d", st)
		}
		if st := get("POST", "https://api-bridge.clever-cloud.com"+app+"/instances", bearer(f)); st != 200 {
			t.Errorf("start: %d", st)
		}
		time.Sleep(time.Minute) // the deploy delay, simulated
		if st, _ := f.App(a.ID); st.State != StateWantsToBeUp || f.Starts(a.ID) != 1 {
			t.Errorf("after the deploy delay: %s, %d starts", st.State, f.Starts(a.ID))
		}
		calls := f.Calls()
		if len(calls) != 5 || calls[0].Host != "bridge" || calls[1].Host != "api" || calls[3].Fault != string(FaultTooMany429) {
			t.Errorf("calls %+v", calls)
		}
	})
}
