package fakeclever

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
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

// Each call records how its request framed the body, as it came on the wire.
func TestInspect_CallsRecordTheBodyFraming(t *testing.T) {
	f := startFake(t, Options{DeployDelay: time.Hour})
	a := f.AddApp(App{Owner: testOrga, State: StateShouldBeDown})
	path := "/v2/organisations/" + testOrga + "/applications/" + a.ID + "/instances"
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.BridgeURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for _, req := range []string{
		"POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer(f) + "\r\nContent-Length: 0\r\n\r\n",
		"DELETE " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer(f) + "\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
		"GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer(f) + "\r\n\r\n",
	} {
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	calls := f.Calls()
	if len(calls) != 3 {
		t.Fatalf("calls %+v", calls)
	}
	for i, want := range []Call{
		{Method: "POST", ContentLength: 0, ContentLengthHeader: []string{"0"}},
		{Method: "DELETE", ContentLength: -1, TransferEncoding: []string{"chunked"}, BodyBytes: 2},
		{Method: "GET"},
	} {
		c := calls[i]
		if c.Method != want.Method || c.ContentLength != want.ContentLength || c.BodyBytes != want.BodyBytes ||
			!slices.Equal(c.TransferEncoding, want.TransferEncoding) || !slices.Equal(c.ContentLengthHeader, want.ContentLengthHeader) {
			t.Errorf("call %d: %s length %d, transfer-encoding %q, Content-Length lines %q, %d body bytes; want %+v",
				i, c.Method, c.ContentLength, c.TransferEncoding, c.ContentLengthHeader, c.BodyBytes, want)
		}
	}
}
