package docker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/certtest"
	"github.com/reapergw/reaper/internal/dockertest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

var bg = context.Background()

func TestDriver_StartWaitsForReadinessThenStopPutsToSleep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("web", nil, "--boot-delay", "300ms")
	d := e.driver(Config{Apps: []AppConfig{demoApp("web", name, addr)}})
	pushed := watch(d)
	if obs := observe(t, d, "web"); obs.State != paas.StateShouldBeDown || obs.Deployment != nil {
		t.Fatalf("a created container: %+v, want SHOULD_BE_DOWN without a deployment", obs)
	}
	if err := d.Start(bg, paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	if obs := observe(t, d, "web"); obs.State != paas.StateWantsToBeUp || obs.Deployment.State != paas.DeploymentWIP {
		t.Fatalf("right after Start: %+v, want WANTS_TO_BE_UP, WIP", obs)
	}
	obs := waitState(t, d, "web", paas.StateShouldBeUp)
	if !answers(addr) {
		t.Error("observed up, but the app does not answer")
	}
	if obs.Deployment.State != paas.DeploymentOK || obs.Deployment.Action != "DEPLOY" {
		t.Errorf("up: deployment %+v, want OK DEPLOY", obs.Deployment)
	}
	if bt := d.Measured(paas.App{ID: "web"}).BootTime; bt < 300*time.Millisecond {
		t.Errorf("boot time %s, want at least the app's 300ms boot", bt)
	}
	if n := pushed.count("web"); n < 2 {
		t.Errorf("watchers told %d times, want the start and the readiness at least", n)
	}
	if n := e.proxy.Starts(dockertest.ID(t, name)); n != 1 {
		t.Errorf("%d start calls, want 1", n)
	}
	cost, err := d.Cost(bg, paas.App{ID: "web"})
	if err != nil || cost.MemoryBytes <= 0 || cost.Currency != "EUR" {
		t.Errorf("cost of a running app: %+v, %v; want its memory, in EUR", cost, err)
	}
	if m := d.Measured(paas.App{ID: "web"}); m.MemoryBytes != cost.MemoryBytes || m.MemoryAt.IsZero() {
		t.Errorf("measured %+v, want the memory Cost read (%d) and when", m, cost.MemoryBytes)
	}

	if err := d.Stop(bg, paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	obs = observe(t, d, "web")
	if obs.State != paas.StateShouldBeDown || obs.Deployment.Action != "UNDEPLOY" || obs.Deployment.State != paas.DeploymentOK {
		t.Errorf("right after Stop: %+v, want SHOULD_BE_DOWN, OK UNDEPLOY", obs)
	}
	if s := dockertest.State(t, name); s != "exited" {
		t.Errorf("container %s after Stop, want exited", s)
	}
	if after, _ := d.Cost(bg, paas.App{ID: "web"}); after.MemoryBytes != cost.MemoryBytes {
		t.Errorf("memory after the stop %d, want the one measured awake (%d)", after.MemoryBytes, cost.MemoryBytes)
	}
	if err := d.Stop(bg, paas.App{ID: "web"}); err != nil {
		t.Errorf("a second Stop: %v, want nil (idempotent)", err)
	}
}

func TestDriver_PauseMethodFreezesAndUnpauses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("paused", nil)
	cfg := demoApp("paused", name, addr)
	cfg.StopMethod = MethodPause
	d := e.driver(Config{Apps: []AppConfig{cfg}})
	if err := d.Start(bg, paas.App{ID: "paused"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "paused", paas.StateShouldBeUp)
	if err := d.Stop(bg, paas.App{ID: "paused"}); err != nil {
		t.Fatal(err)
	}
	if s := dockertest.State(t, name); s != "paused" {
		t.Fatalf("container %s after a pause stop, want paused", s)
	}
	if obs := observe(t, d, "paused"); obs.State != paas.StateShouldBeDown {
		t.Fatalf("paused: %+v, want SHOULD_BE_DOWN", obs)
	}
	began := time.Now()
	if err := d.Start(bg, paas.App{ID: "paused"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "paused", paas.StateShouldBeUp)
	t.Logf("woken from pause in %s", time.Since(began))
	id := dockertest.ID(t, name)
	if n := e.proxy.Calls("POST", "/containers/"+id+"/unpause"); n != 1 {
		t.Errorf("%d unpause calls, want 1", n)
	}
	if n := e.proxy.Calls("POST", "/containers/"+id+"/start"); n != 1 {
		t.Errorf("%d start calls, want 1 (the first wake only)", n)
	}
}

func TestDriver_KillMethodKillsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The app ignores SIGTERM: only a kill stops it quickly.
	name, addr := e.demo("killed", nil, "--ignore-sigterm")
	cfg := demoApp("killed", name, addr)
	cfg.StopMethod = MethodKill
	d := e.driver(Config{Apps: []AppConfig{cfg}})
	if err := d.Start(bg, paas.App{ID: "killed"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "killed", paas.StateShouldBeUp)
	began := time.Now()
	if err := d.Stop(bg, paas.App{ID: "killed"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a kill took %s", took)
	}
	if obs := observe(t, d, "killed"); obs.State != paas.StateShouldBeDown {
		t.Errorf("right after a kill: %+v, want SHOULD_BE_DOWN (not a container still dying)", obs)
	}
	if code := dockertest.Docker(t, "inspect", "--format", "{{.State.ExitCode}}", name); code != "137" {
		t.Errorf("exit code %s, want 137 (SIGKILL)", code)
	}
}

func TestDriver_ConcurrentStartsSendOneStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("once", nil, "--boot-delay", "200ms")
	d := e.driver(Config{Apps: []AppConfig{demoApp("once", name, addr)}})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := d.Start(bg, paas.App{ID: "once"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	waitState(t, d, "once", paas.StateShouldBeUp)
	if n := e.proxy.Starts(dockertest.ID(t, name)); n != 1 {
		t.Errorf("50 concurrent Start calls sent %d starts, want 1", n)
	}
}

// depends_on is the engine's (it starts db first and puts it to sleep after):
// the driver starts and stops the container asked for, and only it.
func TestDriver_DependsOnIsLeftToTheEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dbName, dbAddr := e.demo("db", nil)
	webName, webAddr := e.demo("web", nil)
	web := demoApp("web", webName, webAddr)
	web.DependsOn = []string{"db"}
	d := e.driver(Config{Apps: []AppConfig{demoApp("db", dbName, dbAddr), web}})
	if err := d.Start(bg, paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "web", paas.StateShouldBeUp)
	if s := dockertest.State(t, dbName); s == "running" {
		t.Errorf("db %s after a start of web, want it left to the engine", s)
	}
	if err := d.Start(bg, paas.App{ID: "db"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "db", paas.StateShouldBeUp)
	if obs := observe(t, d, "db"); obs.NotShutdownable {
		t.Errorf("db while web runs: %+v, want shutdownable (the engine keeps it up)", obs)
	}
	if err := d.Stop(bg, paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	if s := dockertest.State(t, dbName); s != "running" {
		t.Errorf("db %s after a stop of web, want running (the engine stops it)", s)
	}
}

func TestDriver_ContainerRemovedByHandIsNotFoundWithItsName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("gone", nil)
	d := e.driver(Config{Apps: []AppConfig{demoApp("gone", name, addr)}})
	if err := d.Start(bg, paas.App{ID: "gone"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "gone", paas.StateShouldBeUp)
	dockertest.Docker(t, "rm", "-f", name)
	var err error
	testwait.For(t, waitLong, "the removal to be observed", func() bool {
		_, err = d.Observe(bg, paas.App{ID: "gone"})
		return errors.Is(err, paas.ErrNotFound)
	})
	if !strings.Contains(err.Error(), name) {
		t.Errorf("observe: %v; want the container's name in it", err)
	}
	if c := paas.CauseOf(err); !strings.HasPrefix(c, fmt.Sprintf("container %q is gone from engine local since ", name)) || !strings.HasSuffix(c, ": removed (or renamed) outside reaper") {
		t.Errorf("the cause of the app's Error: %q; want the container named as removed outside reaper", c)
	}
	err = d.Start(bg, paas.App{ID: "gone"})
	if !isStartFailed(err) || !strings.Contains(err.Error(), "no longer exists") {
		t.Errorf("start of a removed container: %v; want a start failure that says it no longer exists", err)
	}
}

func TestDriver_DeclaredContainerThatDoesNotExistIsNotFoundWithItsCause(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := dockertest.Name(t, "never")
	d := e.driver(Config{Apps: []AppConfig{{ID: "never", Container: name}}})
	_, err := d.Observe(bg, paas.App{ID: "never"})
	if !errors.Is(err, paas.ErrNotFound) {
		t.Fatalf("observe of a declared container that does not exist: %v; want paas.ErrNotFound", err)
	}
	if c, want := paas.CauseOf(err), fmt.Sprintf("container %q not found on engine local (it does not exist, or has another name)", name); c != want {
		t.Errorf("the cause of the app's Error: %q; want %q", c, want)
	}
}

func TestDriver_LabelsDiscoverAnAppAndARecreatedContainerWithoutThemIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	labels := func(addr string) []string {
		return []string{"--label", "reaper.enable=true", "--label", "reaper.app_id=lbl", "--label", "reaper.ready.http=http://" + addr + "/healthz",
			"--label", "reaper.price_per_hour=0.25", "--label", "reaper.currency=USD"}
	}
	name, addr := e.demo("lbl", nil)
	dockertest.Docker(t, "rm", name)
	dockertest.Docker(t, append(append([]string{"create", "--name", name, "-p", addr + ":8080"}, labels(addr)...), e.image, "--listen", ":8080")...)
	other, _ := e.demo("plain", nil) // no label: never an app
	d := e.driver(Config{})
	if obs := observe(t, d, "lbl"); obs.State != paas.StateShouldBeDown || obs.Name != name {
		t.Fatalf("discovered app: %+v", obs)
	}
	if _, err := d.Observe(bg, paas.App{ID: other}); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("a container without reaper.enable: %v, want not found", err)
	}
	if c, _ := d.Cost(bg, paas.App{ID: "lbl"}); c.PerHour != 0.25 || c.Currency != "USD" {
		t.Errorf("cost %+v, want the labels' 0.25 USD", c)
	}
	a, err := d.lookup("lbl")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(bg, paas.App{ID: "lbl"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "lbl", paas.StateShouldBeUp)
	if err := d.Stop(bg, paas.App{ID: "lbl"}); err != nil {
		t.Fatal(err)
	}

	// Asleep, the container is recreated under its name without the labels:
	// reaper must not start it, whether it has seen the change yet or not.
	dockertest.Docker(t, "rm", name)
	dockertest.Docker(t, "create", "--name", name, "-p", addr+":8080", e.image, "--listen", ":8080")
	err = d.start(bg, a) // the app as it was known before the change
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "reaper.enable=true") {
		t.Errorf("start of a container that no longer opted in: %v, want a refusal naming the label", err)
	}
	testwait.For(t, waitLong, "the app to disappear", func() bool {
		_, err := d.Observe(bg, paas.App{ID: "lbl"})
		return errors.Is(err, paas.ErrNotFound)
	})
	if err := d.Start(bg, paas.App{ID: "lbl"}); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("start after the labels went: %v, want not found", err)
	}
	if s := dockertest.State(t, name); s != "created" {
		t.Errorf("the container without labels is %s, want created (never started)", s)
	}
}

func TestDriver_ContainerStartedByHandIsWatchedAndSaysWhy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("back", []string{"--restart", "always"}, "--boot-delay", "100ms")
	d := e.driver(Config{Apps: []AppConfig{demoApp("back", name, addr)}})
	pushed := watch(d)
	dockertest.Docker(t, "start", name) // as the engine does with restart: always
	obs := waitState(t, d, "back", paas.StateShouldBeUp)
	if obs.Deployment == nil || obs.Deployment.State != paas.DeploymentOK {
		t.Errorf("up from outside: deployment %+v, want OK", obs.Deployment)
	}
	if pushed.count("back") < 2 {
		t.Errorf("watchers told %d times, want the start and the readiness", pushed.count("back"))
	}
	if e.logs.Lines(`restart policy \"always\"`) == 0 {
		t.Errorf("the log does not say why the container came back:\n%s", e.logs.String())
	}
	if n := e.proxy.Starts(dockertest.ID(t, name)); n != 0 {
		t.Errorf("reaper sent %d starts to a container started by hand", n)
	}
	if err := d.Stop(bg, paas.App{ID: "back"}); err != nil {
		t.Fatal(err)
	}
	waitContainer(t, name, "exited")
}

func TestDriver_AdoptsARunningContainerAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("adopted", nil)
	dockertest.Docker(t, "start", name)
	testwait.For(t, waitLong, "the app to answer", func() bool { return answers(addr) })
	d := e.driver(Config{Apps: []AppConfig{demoApp("adopted", name, addr)}})
	if obs := observe(t, d, "adopted"); obs.State != paas.StateShouldBeUp {
		t.Errorf("a running container right after New: %+v, want SHOULD_BE_UP at once", obs)
	}
	if n := e.proxy.Starts(dockertest.ID(t, name)); n != 0 {
		t.Errorf("adoption sent %d starts", n)
	}
	if e.logs.Lines("adopted a running container", "ready=true") != 1 {
		t.Errorf("no adoption in the log:\n%s", e.logs.String())
	}
}

func TestDriver_EngineUnreachableThenBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name, addr := e.demo("flaky", nil)
	d := e.driver(Config{Apps: []AppConfig{demoApp("flaky", name, addr)}})
	pushed := watch(d)
	e.proxy.Down()
	var err error
	testwait.For(t, waitLong, "the engine to be seen unreachable", func() bool {
		_, err = d.Observe(bg, paas.App{ID: "flaky"})
		return errors.Is(err, paas.ErrUnavailable)
	})
	if !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("observe: %v, want it to say the engine is unreachable", err)
	}
	if err := d.Start(bg, paas.App{ID: "flaky"}); !paas.Retryable(err) {
		t.Errorf("start without an engine: %v, want a retryable error", err)
	}
	// Changed while reaper could not see it: read again on reconnection.
	dockertest.Docker(t, "start", name)
	before := pushed.count("flaky")
	e.proxy.Up()
	waitState(t, d, "flaky", paas.StateShouldBeUp)
	if pushed.count("flaky") <= before {
		t.Error("watchers were not told when the engine came back")
	}
	if e.logs.Lines("docker engine lost") != 1 {
		t.Errorf("the log does not say the engine was lost, once:\n%s", e.logs.String())
	}
}

func TestDriver_SeveralEnginesEachDriveTheirOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := dockertest.NewProxy(t) // a second engine (the same one, through another door)
	aName, aAddr := e.demo("a", nil)
	bName, bAddr := e.demo("b", nil)
	appA, appB := demoApp("a", aName, aAddr), demoApp("b", bName, bAddr)
	appA.Host, appB.Host = "one", "two"
	d := e.driver(Config{Hosts: []HostConfig{{Name: "one", Host: e.proxy.Host()}, {Name: "two", Host: other.Host()}}, Apps: []AppConfig{appA, appB}})
	for _, id := range []string{"a", "b"} {
		if err := d.Start(bg, paas.App{ID: id}); err != nil {
			t.Fatal(err)
		}
		waitState(t, d, id, paas.StateShouldBeUp)
	}
	aID, bID := dockertest.ID(t, aName), dockertest.ID(t, bName)
	if e.proxy.Starts(aID) != 1 || e.proxy.Starts(bID) != 0 || other.Starts(bID) != 1 || other.Starts(aID) != 0 {
		t.Errorf("starts: engine one a=%d b=%d, engine two a=%d b=%d; want each app started once on its own engine",
			e.proxy.Starts(aID), e.proxy.Starts(bID), other.Starts(aID), other.Starts(bID))
	}
	other.Down()
	testwait.For(t, waitLong, "engine two to be lost", func() bool {
		_, err := d.Observe(bg, paas.App{ID: "b"})
		return errors.Is(err, paas.ErrUnavailable)
	})
	if obs := observe(t, d, "a"); obs.State != paas.StateShouldBeUp {
		t.Errorf("app a while engine two is lost: %+v, want still up", obs)
	}
}

func TestDriver_RemoteEngineOverMutualTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ca := certtest.NewCA(t, "engine-ca")
	dir := t.TempDir()
	server := ca.Issue(t, "engine", certtest.Options{IPs: []string{"127.0.0.1"}})
	host := e.proxy.TLSHost(&tls.Config{
		Certificates: []tls.Certificate{server.TLS(t)},
		ClientCAs:    ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	cert, key := ca.Issue(t, "reaper", certtest.Options{}).Files(t, dir, "reaper")
	caFile := certtest.Write(t, dir, "ca.pem", ca.PEM)
	name, addr := e.demo("remote", nil)
	d := e.driver(Config{Host: host, TLS: &TLSConfig{CA: caFile, Cert: cert, Key: key}, Apps: []AppConfig{demoApp("remote", name, addr)}})
	if err := d.Start(bg, paas.App{ID: "remote"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "remote", paas.StateShouldBeUp)

	// Without TLS, the engine cannot be reached: an error, not a hang.
	d2, err := New(Options{Config: Config{Host: host, Apps: []AppConfig{demoApp("remote", name, addr)}}, Logger: e.logs.Logger(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if _, err := d2.Observe(bg, paas.App{ID: "remote"}); !errors.Is(err, paas.ErrUnavailable) {
		t.Errorf("without TLS: %v, want the engine unavailable", err)
	}
}

func TestDriver_DeclaredContainerWithLabelsIsOneApp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// One with an app id of its own in its labels, one whose labels would make
	// its name the app's id.
	// Ids of this test's own: every driver on the engine discovers them.
	lbl := dockertest.Name(t, "lbl")
	named, addr := e.demo("named", []string{"--label", "reaper.enable=true", "--label", "reaper.app_id=" + lbl, "--label", "reaper.grace_period=1s"})
	bare, bareAddr := e.demo("bare", []string{"--label", "reaper.enable=true"})
	d := e.driver(Config{Apps: []AppConfig{demoApp("decl", named, addr), demoApp("decl2", bare, bareAddr)}})
	for _, id := range []string{lbl, bare} {
		if d.Owns(id) {
			t.Errorf("the driver owns %s, an app only the labels of a declared container claim", id)
		}
		if _, err := d.Observe(bg, paas.App{ID: id}); !errors.Is(err, paas.ErrNotFound) {
			t.Errorf("observe %s: %v, want not found", id, err)
		}
	}
	if h, _ := d.AppPolicy(paas.App{ID: "decl"}); h.GracePeriod != 0 {
		t.Errorf("the declared app took its labels' grace period: %+v", h)
	}
	// Events (start, ready, stop) and the passes they cause: logged once.
	if err := d.Start(bg, paas.App{ID: "decl"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, d, "decl", paas.StateShouldBeUp)
	if err := d.Stop(bg, paas.App{ID: "decl"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ app, container, label string }{{"decl", named, lbl}, {"decl2", bare, bare}} {
		if n := e.logs.Lines("also carries reaper.enable=true", "app="+c.app+" ", "container="+c.container, "label_app_id="+c.label); n != 1 {
			t.Errorf("%s: the labels ignored logged %d times, want once:\n%s", c.app, n, e.logs.String())
		}
	}
	for _, c := range []string{named, bare} { // other tests' labelled containers are discovered
		if n := e.logs.Lines("app discovered from its container's labels", "container="+c+" "); n != 0 {
			t.Errorf("a declared container's labels were read as an app %d times", n)
		}
	}
}
