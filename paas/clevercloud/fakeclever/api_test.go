package fakeclever

import (
	"encoding/json"
	"strings"
	"testing"
)

const testUser = "user_99999999-8888-4777-8666-555555555555"

func TestAPI_Shapes(t *testing.T) {
	clk := newClock()
	f := startFake(t, Options{Now: clk.Now, DeployDelay: deployDel, BootTime: bootTime, StopLinger: linger})
	mine := f.AddApp(App{Owner: testUser, Name: "mine", Flavor: "S", Zone: "rbx"})
	orga := f.AddApp(App{Owner: testOrga, Name: "orga", NotShutdownable: true, VHosts: []string{"www.example.com"}})

	t.Run("summary lists the user among the organisations", func(t *testing.T) {
		var s struct {
			User struct {
				ID           string
				Applications []struct{ ID, Name, State string }
			}
			Organisations []struct {
				ID           string
				Applications []struct{ ID, Name, State string }
			}
		}
		call(t, "GET", f.BridgeURL()+"/v2/summary", bearer(f)).json(t, &s)
		if s.User.ID != testUser || len(s.User.Applications) != 1 || s.User.Applications[0].ID != mine.ID ||
			s.User.Applications[0].State != StateShouldBeUp {
			t.Errorf("user: %+v", s.User)
		}
		if len(s.Organisations) != 2 || s.Organisations[0].ID != testUser || s.Organisations[1].ID != testOrga ||
			s.Organisations[1].Applications[0].Name != "orga" {
			t.Errorf("organisations: %+v", s.Organisations)
		}
	})

	t.Run("self and owner paths", func(t *testing.T) {
		var self struct{ ID string }
		call(t, "GET", f.BridgeURL()+"/v2/self", bearer(f)).json(t, &self)
		if self.ID != testUser {
			t.Errorf("self: %+v", self)
		}
		for _, c := range []struct {
			path string
			want int
		}{
			{"/v2/self/applications/" + mine.ID, 200},
			{"/v2/organisations/" + testUser + "/applications/" + mine.ID, 200},
			{"/v2/organisations/" + testOrga + "/applications/" + orga.ID, 200},
			{"/v2/self/applications/" + orga.ID, 404}, // another owner's app
			{"/v2/organisations/" + testOrga + "/applications/" + mine.ID, 404},
			{"/v2/organisations/orga_unknown/applications", 404},
			{"/v2/organisations/" + testOrga + "/applications/app_nope/deployments", 404},
			{"/v2/nothing", 404},
		} {
			a := call(t, "GET", f.BridgeURL()+c.path, bearer(f))
			if a.status != c.want {
				t.Errorf("%s: %d, want %d", c.path, a.status, c.want)
			}
			if c.want == 404 && (!strings.Contains(string(a.body), `"type":"error"`) || !strings.Contains(string(a.body), `"id":`)) {
				t.Errorf("%s: 404 body %s is not a v2 error", c.path, a.body)
			}
		}
	})

	t.Run("one app", func(t *testing.T) {
		var app struct {
			ID, Name, OwnerID, State, Zone string
			Homogeneous                    *bool
			VHosts                         []struct{ FQDN string }
			Instance                       struct {
				MinInstances, MaxInstances int
				MinFlavor                  struct {
					Name    string
					PriceID string `json:"price_id"`
				}
			}
			Deployment struct{ Shutdownable bool }
		}
		call(t, "GET", f.BridgeURL()+"/v2/self/applications/"+mine.ID, bearer(f)).json(t, &app)
		if app.ID != mine.ID || app.OwnerID != testUser || app.Zone != "rbx" || app.Instance.MinFlavor.Name != "S" ||
			app.Instance.MinFlavor.PriceID != "apps.S" || app.Instance.MinInstances != 1 || !app.Deployment.Shutdownable ||
			app.Homogeneous == nil || len(app.VHosts) != 1 || app.VHosts[0].FQDN != DefaultDomain(mine.ID)+"/" {
			t.Errorf("app: %+v", app)
		}
		call(t, "GET", f.BridgeURL()+"/v2/organisations/"+testOrga+"/applications/"+orga.ID, bearer(f)).json(t, &app)
		if app.Deployment.Shutdownable || len(app.VHosts) != 2 || app.VHosts[1].FQDN != "www.example.com/" {
			t.Errorf("orga app: %+v", app)
		}
		var list []struct{ ID string }
		call(t, "GET", f.BridgeURL()+"/v2/organisations/"+testOrga+"/applications", bearer(f)).json(t, &list)
		if len(list) != 1 || list[0].ID != orga.ID {
			t.Errorf("list: %+v", list)
		}
	})

	t.Run("instances and deployments", func(t *testing.T) {
		base := f.BridgeURL() + "/v2/self/applications/" + mine.ID
		var inst []struct {
			ID, State, Commit string
			DeployNumber      int
			Flavor            struct{ Name string }
		}
		call(t, "GET", base+"/instances", bearer(f)).json(t, &inst)
		if len(inst) != 1 || inst[0].State != "UP" || inst[0].Flavor.Name != "S" || inst[0].Commit == "" || inst[0].ID == "" {
			t.Errorf("instances: %+v", inst)
		}
		// A start then a stop: three deployments, newest first.
		if a := call(t, "POST", base+"/instances?commit=abc123", bearer(f)); a.status != 200 ||
			!strings.Contains(string(a.body), `"deploymentId":"deployment_`) {
			t.Fatalf("start: %d %s", a.status, a.body)
		}
		clk.Add(deployDel + bootTime)
		if a := call(t, "DELETE", base+"/instances", bearer(f)); a.status != 200 || !strings.Contains(string(a.body), `"type":"success"`) {
			t.Fatalf("stop: %d %s", a.status, a.body)
		}
		var deps []struct {
			ID                          int
			UUID, State, Action, Commit string
			Date                        int64
			Cause                       *string
		}
		call(t, "GET", base+"/deployments", bearer(f)).json(t, &deps)
		if len(deps) != 3 || deps[0].Action != ActionUndeploy || deps[0].State != DeploymentWIP ||
			deps[1].Action != ActionDeploy || deps[1].Commit != "abc123" || deps[1].ID != 2 || deps[2].ID != 1 {
			t.Fatalf("deployments: %+v", deps)
		}
		if want := clk.Now().Add(-bootTime).UnixMilli(); deps[1].Date != want {
			t.Errorf("date %d, want %d (epoch ms of when it began)", deps[1].Date, want)
		}
		call(t, "GET", base+"/deployments?limit=1&offset=1", bearer(f)).json(t, &deps)
		if len(deps) != 1 || deps[0].ID != 2 {
			t.Errorf("limit and offset: %+v", deps)
		}
		if a := call(t, "GET", base+"/deployments?limit=0", bearer(f)); a.status != 400 {
			t.Errorf("limit=0: %d", a.status)
		}
		if f.Starts(mine.ID) != 1 || f.Restarts(mine.ID) != 1 {
			t.Errorf("starts %d restarts %d", f.Starts(mine.ID), f.Restarts(mine.ID))
		}
	})

	t.Run("price system", func(t *testing.T) {
		var ps struct {
			ZoneID   string `json:"zone_id"`
			Currency string
			Runtime  []struct {
				SlugID   string `json:"slug_id"`
				Price    float64
				TimeUnit string `json:"time_unit"`
			}
		}
		call(t, "GET", f.APIURL()+"/v4/billing/price-system?zone_id=par&currency=EUR", oauthHeader(f.OAuth())).json(t, &ps)
		found := false
		for _, r := range ps.Runtime {
			if r.SlugID == "apps.XS" && r.Price > 0 && r.TimeUnit == "PT1H" {
				found = true
			}
		}
		if ps.ZoneID != "par" || ps.Currency != "EUR" || !found {
			t.Errorf("price system: %+v", ps)
		}
		for q, want := range map[string]int{"": 400, "?zone_id=mars": 404, "?zone_id=par&currency=XXX": 400} {
			a := call(t, "GET", f.BridgeURL()+"/v4/billing/price-system"+q, bearer(f))
			var e map[string]any
			_ = json.Unmarshal(a.body, &e)
			if a.status != want || e["apiRequestId"] == nil || e["code"] == nil || e["error"] == nil {
				t.Errorf("%q: %d %s", q, a.status, a.body)
			}
		}
	})
}

func TestAPI_SummaryOfManyApps(t *testing.T) {
	f := startFake(t, Options{})
	for range 500 {
		f.AddApp(App{Owner: testOrga})
	}
	var s struct {
		Organisations []struct{ Applications []struct{ ID string } }
	}
	call(t, "GET", f.BridgeURL()+"/v2/summary", bearer(f)).json(t, &s)
	if n := len(s.Organisations[1].Applications); n != 500 {
		t.Errorf("%d apps in the summary", n)
	}
}

func TestAddApp_RefusesASecondUser(t *testing.T) {
	f := New(Options{})
	f.AddApp(App{Owner: testUser})
	if f.UserID() != testUser {
		t.Errorf("user = %s", f.UserID())
	}
	defer func() {
		if recover() == nil {
			t.Error("a second user was accepted")
		}
	}()
	f.AddApp(App{Owner: "user_other"})
}
