package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/kubetest"
	"github.com/reapergw/reaper/internal/testwait"
)

// waitFor bounds the waits of a wake on the shared, loaded machine.
const waitFor = 90 * time.Second

// scene is one test's namespace, its workload and the process standing in for
// the workload's Service.
type scene struct {
	t       *testing.T
	s       *kubetest.Server
	ns      string
	cl      *clusterenv.Cleanups
	backend string // host:port of the demo app
	admin   string // host:port of the admin listener of serve's reaper
}

// adminToken is the reapers' admin token.
const adminToken = "kube-e2e-admin-token"

// newScene makes a namespace where the reaper user has exactly the shipped
// Role's rights, a Deployment "web" at 0 annotated for discovery, and the
// demo app that answers for it.
func newScene(t *testing.T, annotations map[string]string) *scene {
	s := kubetest.Need(t, kube)
	sc := &scene{t: t, s: s, ns: s.Namespace(t), cl: &clusterenv.Cleanups{}}
	t.Cleanup(sc.cl.Run)
	s.Bind(t, sc.ns, kubetest.ReaperUser, kubetest.RoleFromFile(t, "../../examples/kubernetes/rbac.yaml"))
	ann := map[string]string{"reaper.enable": "true", "reaper.app_id": "web"}
	for k, v := range annotations {
		ann[k] = v
	}
	s.Deployment(t, sc.ns, "web", 0, ann)
	sc.backend = freeport.Addr(t)
	dir := t.TempDir()
	if _, err := clusterenv.StartProcess(sc.cl, "demoapp", []string{bins.demoapp, "--listen", sc.backend, "--name", "web"}, os.Environ(), filepath.Join(dir, "demoapp.log")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitFor, "the demo app listening", func() bool {
		c, err := net.Dial("tcp", sc.backend)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return sc
}

// paas is the paas section: the Kubernetes driver as the reaper user.
func (sc *scene) paas() clusterenv.PaaSConfig {
	return clusterenv.PaaSConfig{Driver: "kubernetes", Kubernetes: &clusterenv.KubeConfig{
		Kubeconfig: sc.s.Kubeconfig(sc.t, kubetest.ReaperUser), Namespaces: []string{sc.ns}}}
}

// routes is the route of web.localhost to the demo app, holding requests
// while the workload wakes.
func (sc *scene) routes() []clusterenv.RouteConfig {
	return []clusterenv.RouteConfig{{
		ID:       "web",
		Frontend: clusterenv.FrontendConfig{Domains: []string{"web.localhost"}},
		Backend:  clusterenv.BackendConfig{Targets: []string{"http://" + sc.backend}},
		Plugins: []clusterenv.PluginConfig{{Plugin: "reaper", Config: clusterenv.ReaperPluginConfig{
			AppID: "web", GracePeriod: "1h", FailTimeout: "2m", APIBehavior: "hold"}}},
	}}
}

// replicas reads the Deployment's spec.replicas and status.readyReplicas.
func (sc *scene) replicas() (spec, ready int32) {
	d, err := sc.s.Admin(sc.t).Apps.Deployments(sc.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		sc.t.Fatal(err)
	}
	return *d.Spec.Replicas, d.Status.ReadyReplicas
}

// answer is what a request through the gateway got.
type answer struct {
	status int
	body   string
	err    error
}

// get sends n requests to the gateway at once, for web.localhost, and
// returns the channel their answers arrive on.
func get(gateway string, n int) <-chan answer {
	out := make(chan answer, n)
	c := &http.Client{Timeout: 3 * time.Minute}
	for range n {
		go func() {
			req, _ := http.NewRequest("GET", "http://"+gateway+"/", nil)
			req.Host = "web.localhost"
			resp, err := c.Do(req)
			if err != nil {
				out <- answer{err: err}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out <- answer{status: resp.StatusCode, body: string(b)}
		}()
	}
	return out
}

// wakeAndAnswer waits until the held requests scaled the Deployment to want,
// checks that none was answered before a Pod was ready, marks its Pods ready
// (as the kubelet would report them), and checks that all n are answered by
// the app.
func (sc *scene) wakeAndAnswer(answers <-chan answer, n int, want int32) {
	t := sc.t
	t.Helper()
	testwait.For(t, waitFor, fmt.Sprintf("the Deployment scaled to %d", want), func() bool {
		spec, _ := sc.replicas()
		return spec == want
	})
	select {
	case a := <-answers:
		t.Fatalf("a request was answered before any Pod was ready: %+v", a)
	default:
	}
	// The controller manager makes the Pods (Pending: nothing schedules or
	// runs them); we play the kubelet and report them Running and Ready.
	testwait.For(t, waitFor, "the Deployment's Pods made and marked ready", func() bool {
		return sc.s.MarkPodsReady(t, sc.ns, "web") >= int(want)
	})
	for i := range n {
		select {
		case a := <-answers:
			if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, "web") {
				t.Fatalf("request %d: %d %q %v, want the app's 200", i, a.status, a.body, a.err)
			}
		case <-time.After(waitFor):
			t.Fatalf("request %d not answered %v after the Pods were ready", i, waitFor)
		}
	}
}

// TestServe_WakesASleepingDeploymentOnRequest: 30 requests at once to a
// Deployment at 0 make one scale-up, to its reaper.replicas count; they are
// held until a Pod is ready, then answered by the app; after its
// reaper.grace_period without traffic, reaper scales it back to 0.
func TestServe_WakesASleepingDeploymentOnRequest(t *testing.T) {
	sc := newScene(t, map[string]string{"reaper.replicas": "2", "reaper.grace_period": "3s"})
	ups := sc.s.CountScaleUps(t, sc.ns)
	p, gateway := sc.serve()
	sc.wakeAndAnswer(get(gateway, 30), 30, 2)
	if n := ups("web"); n != 1 {
		t.Errorf("30 concurrent requests: %d scale-ups, want 1", n)
	}
	testwait.For(t, waitFor, "the Deployment scaled to 0 after its grace period", func() bool {
		spec, _ := sc.replicas()
		return spec == 0
	})
	if t.Failed() {
		t.Logf("reaper's log:\n%s", p.Log.Tail(80))
	}
}

// serve starts one reaper (memory store) with the scene's route, and returns
// it and its gateway's address.
func (sc *scene) serve() (*clusterenv.Process, string) {
	t := sc.t
	t.Helper()
	dir := t.TempDir()
	sc.admin = freeport.Addr(t)
	path, err := clusterenv.WriteConfig(dir, clusterenv.Config{
		Node:   clusterenv.NodeConfig{ID: "solo", Listen: "127.0.0.1:0", AdminListen: sc.admin, AdminToken: adminToken, ShutdownTimeout: "2s"},
		Reaper: &clusterenv.JobConfig{JobInterval: "1s", FastInterval: "200ms"},
		PaaS:   sc.paas(),
		Routes: sc.routes(),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := clusterenv.StartProcess(sc.cl, "reaper", []string{bins.reaper, "serve", "--config", path, "--log-format", "json"}, os.Environ(), filepath.Join(dir, "reaper.log"))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := p.WaitMsg(t.Context(), "gateway listening", waitFor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitMsg(t.Context(), "reaper started", waitFor); err != nil {
		t.Fatal(err)
	}
	// web known asleep before any request: an app no look has placed yet
	// (WaitingForInit) is proxied to, and the demo app standing in for the
	// Service always answers.
	hc := clusterenv.NewClient(5 * time.Second)
	defer hc.CloseIdleConnections()
	if err := clusterenv.WaitStatus(t.Context(), hc, gw.Addr, "web.localhost", "Down", waitFor); err != nil {
		t.Fatal(err)
	}
	return p, gw.Addr
}

// TestServe_DeletedDeploymentIsError: a Deployment deleted by hand puts its
// app in Error, with a cause that names it as deleted, and a log line that
// names it.
func TestServe_DeletedDeploymentIsError(t *testing.T) {
	sc := newScene(t, nil)
	p, gateway := sc.serve()
	c := clusterenv.NewClient(10 * time.Second)
	defer c.CloseIdleConnections()
	if err := clusterenv.WaitStatus(t.Context(), c, gateway, "web.localhost", "Down", waitFor); err != nil {
		t.Fatal(err)
	}
	if err := sc.s.Admin(t).Apps.Deployments(sc.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clusterenv.WaitStatus(t.Context(), c, gateway, "web.localhost", "Error", waitFor); err != nil {
		t.Fatalf("%v\nreaper's log:\n%s", err, p.Log.Tail(40))
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+sc.admin+"/api/apps/web", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The record's cause is the driver's: it names the workload; so does the
	// log.
	if !strings.Contains(string(body), `"cause": "Deployment `+sc.ns+`/web was deleted at `) {
		t.Errorf("the admin API's view of an app whose Deployment was deleted: %s, want a cause naming the Deployment", body)
	}
	if _, err := p.Log.WaitFor(t.Context(), waitFor, func(l string) bool {
		return strings.Contains(l, "workload deleted") && strings.Contains(l, "Deployment "+sc.ns+"/web")
	}); err != nil {
		t.Errorf("no log line names the deleted Deployment (%v):\n%s", err, p.Log.Tail(30))
	}
}
