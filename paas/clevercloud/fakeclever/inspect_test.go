package fakeclever

import (
	"testing"
	"time"
)

func TestInspect_CallsAreBoundedAndResettable(t *testing.T) {
	f := New(Options{})
	for i := range maxCalls + 10 {
		f.record(Call{Host: "api", Path: "/v2/summary", Status: 200 + i%2})
	}
	f.record(Call{Host: "edge", Path: "/"})
	calls := f.Calls()
	if len(calls) > maxCalls || len(calls) < maxCalls/2 {
		t.Errorf("%d calls kept, want between %d and %d", len(calls), maxCalls/2, maxCalls)
	}
	if len(f.EdgeCalls()) != 1 {
		t.Errorf("edge calls: %d", len(f.EdgeCalls()))
	}
	// Calls returns a copy.
	calls[0].Path = "changed"
	if f.Calls()[0].Path == "changed" {
		t.Error("Calls shares its slice")
	}
	f.ResetCalls()
	if len(f.Calls()) != 0 || len(f.EdgeCalls()) != 0 {
		t.Error("ResetCalls kept calls")
	}
}

func TestInspect_AppStatus(t *testing.T) {
	clk := newClock()
	f := New(Options{Now: clk.Now, BootTime: time.Second})
	a := f.AddApp(App{Owner: testOrga, Name: "n"})
	b := f.AddApp(App{Owner: testOrga, State: StateShouldBeDown})
	st, ok := f.App(a.ID)
	if !ok || st.State != StateShouldBeUp || !st.Serving || len(st.Instances) != 1 || st.Instances[0] != "UP" ||
		st.Deployment.Action != ActionDeploy || st.Deployment.State != DeploymentOK || st.Domain != DefaultDomain(a.ID) {
		t.Errorf("up app: %+v", st)
	}
	if _, ok := f.App("app_nope"); ok {
		t.Error("unknown app found")
	}
	all := f.Apps()
	if len(all) != 2 || all[0].ID != a.ID || all[1].ID != b.ID || all[1].Serving || all[1].State != StateShouldBeDown {
		t.Errorf("apps: %+v", all)
	}
	if f.Starts("app_nope") != 0 || f.Restarts("app_nope") != 0 {
		t.Error("counts for an unknown app")
	}
}
