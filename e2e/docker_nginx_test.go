//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
)

// These tests run nginx itself with the socket-proxy recipe of docs/docker.md
// ("Least privilege"), read from the doc (dockertest.StartNginx), in front of the
// machine's engine: the calls of the driver's list go through, every other call
// is refused with a 403 and changes nothing, and a reaper node whose only engine
// is that proxy wakes and puts to sleep a container.

// rawCall sends one request, its request-target exactly as written (no client
// cleans or escapes it), on a connection of its own to the unix socket sock, and
// returns the status and the body.
func rawCall(t *testing.T, sock, method, target string, body []byte) (int, string) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n", method, target)
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, target, err)
	}
	return resp.StatusCode, string(b)
}

// eventStream follows GET {prefix}/events for one container through the socket
// and sends the action of each event on the channel it returns, as it comes;
// the stream is closed when the test ends.
func eventStream(t *testing.T, sock, prefix, id string) <-chan string {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	filters := url.QueryEscape(fmt.Sprintf(`{"container":[%q],"type":["container"]}`, id))
	fmt.Fprintf(conn, "GET %s/events?filters=%s HTTP/1.1\r\nHost: docker\r\n\r\n", prefix, filters)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s/events: %v", prefix, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/events: %d, want 200", prefix, resp.StatusCode)
	}
	actions := make(chan string, 64)
	go func() {
		defer close(actions)
		dec := json.NewDecoder(resp.Body)
		for {
			var m struct{ Action string }
			if dec.Decode(&m) != nil {
				return
			}
			actions <- m.Action
		}
	}()
	return actions
}

// waitAction reads actions until want comes, for at most 15 s.
func waitAction(t *testing.T, actions <-chan string, want string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case a, ok := <-actions:
			if !ok {
				t.Fatalf("the event stream ended before a %q event", want)
			}
			if a == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q event through the proxy within 15s: the stream is not passed on as it comes", want)
		}
	}
}

// apiPrefix is "/v" and the API version the engine gives through the proxy.
func apiPrefix(t *testing.T, sock string) string {
	t.Helper()
	code, body := rawCall(t, sock, "GET", "/version", nil)
	var v struct{ ApiVersion string }
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil || v.ApiVersion == "" {
		t.Fatalf("GET /version through nginx: %d %s", code, body)
	}
	return "/v" + v.ApiVersion
}

// TestDocker_NginxRecipeAllowsExactlyTheDriversCalls checks the recipe against
// the list of docs/docker.md: each call of the driver's succeeds, with and
// without a /v1.xx prefix (the event stream passed on event by event), and a
// call outside it — a write, a read of logs or files, an image, a wrong method,
// a path dressed up to look allowed — is refused with a 403 and leaves every
// container and image as it was.
func TestDocker_NginxRecipeAllowsExactlyTheDriversCalls(t *testing.T) {
	t.Parallel()
	dockertest.Require(t)
	n := dockertest.StartNginx(t)
	image := dockertest.BuildImage(t, "cmd/demoapp")
	name := dockertest.Create(t, "c", "--network", "none", image, "--listen", ":8080", "--shutdown-timeout", "1s")
	id := dockertest.ID(t, name)
	v := apiPrefix(t, n.Path)

	before := nginxWorld(t, id)
	for _, prefix := range []string{"", v} {
		for _, c := range forbiddenCalls(t, name, image) {
			target := prefix + strings.ReplaceAll(c.target, "{id}", id)
			if code, body := rawCall(t, n.Path, c.method, target, c.body); code != http.StatusForbidden {
				t.Errorf("%s %s through nginx: %d %.200s, want 403", c.method, target, code, body)
			}
		}
	}
	if after := nginxWorld(t, id); after != before {
		t.Errorf("calls refused by nginx changed the engine:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	for _, prefix := range []string{"", v} {
		driversCalls(t, n.Path, prefix, id, name)
	}
	if s := dockertest.State(t, name); s != "exited" {
		t.Errorf("the container is %s after the last kill, want exited", s)
	}
}

type rawReq struct {
	method, target string // {id} in target is the container's id
	body           []byte
}

// forbiddenCalls are calls outside the driver's list, each of which would
// change something (or read what the driver never reads) if it went through.
func forbiddenCalls(t *testing.T, name, image string) []rawReq {
	create, _ := json.Marshal(map[string]any{"Image": image, "Cmd": []string{"--listen", ":8080"}})
	exec, _ := json.Marshal(map[string]any{"Cmd": []string{"/demoapp", "--help"}})
	evil := url.QueryEscape(dockertest.Name(t, "evil"))
	return []rawReq{
		{"POST", "/containers/create?name=" + evil, create},
		{"POST", "/containers/{id}/exec", exec},
		{"DELETE", "/containers/{id}?force=1", nil},
		{"POST", "/images/create?fromImage=" + url.QueryEscape(image) + "&tag=evil", nil},
		{"POST", "/images/create?fromSrc=-&repo=" + evil + "&tag=x", make([]byte, 1024)}, // an empty tar
		{"GET", "/images/json", nil},
		{"DELETE", "/images/" + image, nil},
		{"POST", "/containers/" + name + "/rename?name=" + evil, nil},
		{"POST", "/containers/{id}/update", []byte(`{"RestartPolicy":{"Name":"always"}}`)},
		{"POST", "/containers/{id}/restart", nil},
		{"GET", "/containers/{id}/archive?path=/", nil},
		{"GET", "/containers/{id}/logs?stdout=1&stderr=1", nil},
		{"GET", "/containers/{id}/export", nil},
		// Wrong methods, on allowed paths.
		{"POST", "/containers/json", nil},
		{"POST", "/_ping", nil},
		{"GET", "/containers/{id}/start", nil},
		{"HEAD", "/containers/{id}/start", nil},
		{"HEAD", "/containers/{id}/kill", nil},
		{"DELETE", "/containers/{id}/json", nil},
		// Paths dressed up: dot segments, encoded slashes and dots, doubled
		// slashes, a newline, each hiding a call outside the list or making the
		// engine route a path other than the one nginx matched.
		{"GET", "/containers/x/../../images/json", nil},
		{"GET", "/containers/json/../../images/json", nil},
		{"GET", "/containers/json%2F..%2F..%2Fimages%2Fjson", nil},
		{"GET", "/containers/{id}%2Flogs%3F/json", nil},
		{"POST", "/images/create%2F..%2F..%2Fcontainers%2F{id}%2Fstart", nil},
		{"POST", "/containers/create%2F..%2F{id}/start", nil},
		{"POST", "/containers/{id}/%2E%2E/create/start", nil},
		{"POST", "/containers/{id}//start", nil},
		{"POST", "//containers/create", create},
		{"POST", "/containers/{id}/start%0A", nil},
		{"GET", "/containers/json%0A", nil},
	}
}

// nginxWorld is what a call that nginx refused must not have changed: the
// test's containers (their id, name, state and execs), the demo image and any
// image the refused calls would have made.
func nginxWorld(t *testing.T, id string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(dockertest.Docker(t, "ps", "-a", "--no-trunc", "--filter", "name="+dockertest.Name(t, ""), "--format", "{{.ID}} {{.Names}} {{.State}}"))
	b.WriteString("\nexecs: " + dockertest.Docker(t, "inspect", "--format", "{{.ExecIDs}} {{.HostConfig.RestartPolicy.Name}}", id))
	b.WriteString("\nimages:\n" + dockertest.Docker(t, "image", "ls", "--no-trunc", "--format", "{{.ID}} {{.Repository}}:{{.Tag}}",
		"--filter", "reference="+dockertest.Prefix+"*"))
	return b.String()
}

// driversCalls makes each call of the driver's list through the socket, the
// path under prefix ("" or /v1.xx), and checks that it did what it says: the
// container goes through start, pause, unpause, stop, start and kill, and each
// of these comes through the event stream as it happens.
func driversCalls(t *testing.T, sock, prefix, id, name string) {
	t.Helper()
	expect := func(method, target string, code int, contains string) {
		t.Helper()
		got, body := rawCall(t, sock, method, prefix+target, nil)
		if got != code || !strings.Contains(body, contains) {
			t.Fatalf("%s %s%s through nginx: %d %.300s, want %d with %q", method, prefix, target, got, body, code, contains)
		}
	}
	expect("GET", "/_ping", 200, "OK")
	expect("HEAD", "/_ping", 200, "")
	expect("GET", "/version", 200, `"ApiVersion"`)
	expect("GET", "/containers/json?all=1", 200, id)
	expect("GET", "/containers/"+name+"/json", 200, id)
	expect("GET", "/containers/"+id+"/json", 200, `"Name":"/`+name+`"`)
	actions := eventStream(t, sock, prefix, id)
	for _, step := range []struct{ call, event string }{
		{"start", "start"}, {"pause", "pause"}, {"unpause", "unpause"}, {"stop?t=1", "stop"}, {"start", "start"},
	} {
		expect("POST", "/containers/"+id+"/"+step.call, 204, "")
		waitAction(t, actions, step.event)
	}
	expect("GET", "/containers/"+id+"/stats?stream=false", 200, `"memory_stats"`)
	expect("POST", "/containers/"+id+"/kill?signal=SIGKILL", 204, "")
	waitAction(t, actions, "die")
}

// TestDocker_WakeAndSleepThroughTheNginxRecipe runs a reaper node whose only
// engine, in paas.docker.hosts[], is nginx running the recipe: a request wakes a
// container (the app answers), the container is put to sleep after its grace
// period, one stopped by hand is seen at once (the event stream goes through),
// and nginx refused none of the driver's calls.
func TestDocker_WakeAndSleepThroughTheNginxRecipe(t *testing.T) {
	t.Parallel()
	e := newDockerEnv(t)
	n := dockertest.StartNginx(t)
	e.host, e.hostName = n.Host(), "nginx"
	nap := e.add(dockerApp{id: "nap", grace: "2s"}, nil)
	hand := e.add(dockerApp{id: "hand"}, nil)
	p := e.start()
	e.waitStatus("nap", "Down", 15*time.Second)

	resp, err := p.request("GET", "nap.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"name":"nap"`) {
		t.Fatalf("the wake through nginx: %d %s, want the app's answer", resp.StatusCode, body)
	}
	last := time.Now()
	testwait.For(t, 20*time.Second, "the container to be put to sleep", func() bool { return dockertest.State(t, nap.container) == "exited" })
	if idle := time.Since(last); idle < 2*time.Second {
		t.Errorf("put to sleep %s after the last request, before the 2s grace period", idle)
	}
	e.waitStatus("nap", "Down", 10*time.Second)
	if gib, _ := e.adminGet("/api/apps/nap/savings")["gib"].(float64); gib <= 0 {
		t.Errorf("savings: %v, want the memory read from the stats through nginx", e.adminGet("/api/apps/nap/savings"))
	}

	resp, err = p.request("GET", "hand.test", "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("hand: %d %s", resp.StatusCode, body)
	}
	e.waitStatus("hand", "Up", 10*time.Second)
	dockertest.Docker(t, "stop", "-t", "1", hand.container)
	// Only the event stream tells the driver of a stop it did not make.
	e.waitStatus("hand", "Down", 10*time.Second)

	// nginx logs a request once it ends: the event stream, still open, is not
	// there yet.
	log := n.AccessLog(t)
	napID := dockertest.ID(t, nap.container)
	for _, want := range []string{
		`"GET /v[0-9.]+/containers/json\?[^"]* HTTP/1.1" 200`,
		`"POST /v[0-9.]+/containers/` + napID + `/start HTTP/1.1" 204`,
		`"GET /v[0-9.]+/containers/` + napID + `/stats\?[^"]* HTTP/1.1" 200`,
		`"POST /v[0-9.]+/containers/` + napID + `/stop\?[^"]* HTTP/1.1" 204`,
	} {
		if !regexp.MustCompile(want).MatchString(log) {
			t.Errorf("nginx's access log has no line matching %s; it says:\n%s", want, log)
		}
	}
	if refused := regexp.MustCompile(`(?m)^.*" 403 .*$`).FindAllString(log, -1); len(refused) > 0 {
		t.Errorf("nginx refused calls of the driver's:\n%s", strings.Join(refused, "\n"))
	}
	if strings.Contains(p.logText(), "docker engine lost") {
		t.Errorf("the driver lost the engine through nginx; its log:\n%s", warnLines(p))
	}
}
