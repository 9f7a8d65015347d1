package kubernetes

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	autoscalingclient "k8s.io/client-go/kubernetes/typed/autoscaling/v2"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/kubetest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

const waitFor = 30 * time.Second

// waitState polls Observe until the app is in state want.
func waitState(t *testing.T, d *Driver, id string, want paas.State) paas.Observation {
	t.Helper()
	var obs paas.Observation
	var err error
	if !testwait.Until(waitFor, func() bool {
		obs, err = d.Observe(t.Context(), paas.App{ID: id})
		return err == nil && obs.State == want
	}) {
		t.Fatalf("%s: not %s after %v: last %s, err %v", id, want, waitFor, obs.State, err)
	}
	return obs
}

// specReplicas reads a workload's spec.replicas.
func (e *env) specReplicas(kind, name string) int32 {
	e.t.Helper()
	apps := e.s.Admin(e.t).Apps
	if kind == KindStatefulSet {
		st, err := apps.StatefulSets(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		return *st.Spec.Replicas
	}
	dep, err := apps.Deployments(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return *dep.Spec.Replicas
}

// TestDriver_StatefulSetWakesToItsCountAndSleeps: a declared StatefulSet at 0
// is woken to the file's replicas, observed up once its status counts a ready
// replica, and put back to 0.
func TestDriver_StatefulSetWakesToItsCountAndSleeps(t *testing.T) {
	e := newEnv(t)
	e.s.StatefulSet(t, e.ns, "db", 0, nil)
	e.s.AutoReady(t, e.ns)
	d := e.driver(Config{Apps: []AppConfig{{ID: "db", Kind: KindStatefulSet, Replicas: 3}}}, kubetest.AdminUser)
	if obs := observe(t, d, "db"); obs.State != paas.StateShouldBeDown {
		t.Fatalf("a StatefulSet at 0: %s, want SHOULD_BE_DOWN", obs.State)
	}
	if err := d.Start(t.Context(), paas.App{ID: "db"}); err != nil {
		t.Fatal(err)
	}
	obs := waitState(t, d, "db", paas.StateShouldBeUp)
	if obs.Deployment == nil || obs.Deployment.State != paas.DeploymentOK || obs.Deployment.Action != "DEPLOY" {
		t.Errorf("up: deployment %+v, want OK DEPLOY", obs.Deployment)
	}
	if n := e.specReplicas(KindStatefulSet, "db"); n != 3 {
		t.Errorf("woken to %d replicas, want 3 (paas.kubernetes.apps[].replicas)", n)
	}
	if err := d.Stop(t.Context(), paas.App{ID: "db"}); err != nil {
		t.Fatal(err)
	}
	if obs := observe(t, d, "db"); obs.State != paas.StateShouldBeDown || obs.Deployment.Action != "UNDEPLOY" {
		t.Errorf("after Stop: %s %+v, want SHOULD_BE_DOWN, UNDEPLOY", obs.State, obs.Deployment)
	}
	if n := e.specReplicas(KindStatefulSet, "db"); n != 0 {
		t.Errorf("asleep with %d replicas, want 0", n)
	}
}

// TestDriver_ConcurrentStartsScaleOnce: 30 Starts at once make one scale-up,
// to the count the workload had before it slept.
func TestDriver_ConcurrentStartsScaleOnce(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "web", 4, map[string]string{AnnotationEnable: "true"})
	e.s.AutoReady(t, e.ns)
	ups := e.s.CountScaleUps(t, e.ns)
	d := e.driver(Config{}, kubetest.AdminUser)
	waitState(t, d, "web", paas.StateShouldBeUp)
	if err := d.Stop(t.Context(), paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for range 30 {
		wg.Go(func() { errs <- d.Start(t.Context(), paas.App{ID: "web"}) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, d, "web", paas.StateShouldBeUp)
	if n := ups("web"); n != 1 {
		t.Errorf("30 concurrent Starts: %d scale-ups, want 1", n)
	}
	if n := e.specReplicas(KindDeployment, "web"); n != 4 {
		t.Errorf("woken to %d replicas, want 4 (the count before it slept)", n)
	}
}

// TestDriver_DeletedWorkloadIsNotFound: a workload deleted by hand is
// paas.ErrNotFound (reaper's Error), with a message that says so and when.
func TestDriver_DeletedWorkloadIsNotFound(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "web", 0, nil)
	d := e.driver(Config{Apps: []AppConfig{{ID: "web"}}}, kubetest.AdminUser)
	observe(t, d, "web")
	if err := e.s.Admin(t).Apps.Deployments(e.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var err error
	testwait.For(t, waitFor, "the deletion seen", func() bool {
		_, err = d.Observe(t.Context(), paas.App{ID: "web"})
		return err != nil
	})
	if !errors.Is(err, paas.ErrNotFound) || !strings.Contains(err.Error(), "Deployment "+e.ns+"/web was deleted at") {
		t.Errorf("Observe of a deleted workload: %v, want paas.ErrNotFound saying it was deleted", err)
	}
	if c := paas.CauseOf(err); !strings.HasPrefix(c, "Deployment "+e.ns+"/web was deleted at ") {
		t.Errorf("the cause of the app's Error: %q, want the Deployment named as deleted", c)
	}
	if err := d.Start(t.Context(), paas.App{ID: "web"}); !errors.Is(err, paas.ErrNotFound) {
		t.Errorf("Start of a deleted workload: %v, want paas.ErrNotFound", err)
	}
}

// TestDriver_AnnotationAddedAtRunTimeIsDiscovered: a workload annotated while
// the driver runs becomes an app (told to watchers) with its annotations'
// policy, and stops being one when the annotation goes.
func TestDriver_AnnotationAddedAtRunTimeIsDiscovered(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "shop", 0, nil)
	d := e.driver(Config{}, kubetest.AdminUser)
	if d.Owns("store") {
		t.Fatal("an unannotated workload is an app")
	}
	told := make(chan struct{}, 64)
	d.Watch(t.Context(), func(id string) {
		if id == "store" {
			select {
			case told <- struct{}{}:
			default:
			}
		}
	})
	patch := `{"metadata":{"annotations":{"reaper.enable":"true","reaper.app_id":"store","reaper.grace_period":"90s","reaper.busy_url":"http://store.shop:8080/busy"}}}`
	if _, err := e.s.Admin(t).Apps.Deployments(e.ns).Patch(context.Background(), "shop", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-told:
	case <-time.After(waitFor):
		t.Fatal("the annotated workload was not reported to watchers")
	}
	if !d.Owns("store") {
		t.Fatal("annotated at run time: not owned")
	}
	hint, err := d.AppPolicy(paas.App{ID: "store"})
	if err != nil || hint.GracePeriod != 90*time.Second || hint.BusyURL != "http://store.shop:8080/busy" || hint.BusyMax != 0 ||
		!strings.HasPrefix(hint.BusyFrom, "annotation reaper.busy_url of ") {
		t.Errorf("AppPolicy: %+v, %v; want 90s from reaper.grace_period and reaper.busy_url", hint, err)
	}
	patch = `{"metadata":{"annotations":{"reaper.enable":null}}}`
	if _, err := e.s.Admin(t).Apps.Deployments(e.ns).Patch(context.Background(), "shop", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitFor, "the app forgotten once its annotation went", func() bool { return !d.Owns("store") })
}

// TestDriver_RestartAdoptsRunningWorkloads: a driver started while workloads
// run finds them up without scaling them; after a restart while asleep, the
// wake scales to the reaper.replicas annotation (which a restart does not
// lose).
func TestDriver_RestartAdoptsRunningWorkloads(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "web", 2, map[string]string{AnnotationEnable: "true", AnnotationReplicas: "2"})
	e.s.AutoReady(t, e.ns)
	ups := e.s.CountScaleUps(t, e.ns)
	first := e.driver(Config{}, kubetest.AdminUser)
	waitState(t, first, "web", paas.StateShouldBeUp)
	_ = first.Close()
	second := e.driver(Config{}, kubetest.AdminUser)
	if obs := observe(t, second, "web"); obs.State != paas.StateShouldBeUp {
		t.Fatalf("adopted: %s, want SHOULD_BE_UP at once", obs.State)
	}
	if err := second.Stop(t.Context(), paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	_ = second.Close()
	third := e.driver(Config{}, kubetest.AdminUser)
	if err := third.Start(t.Context(), paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, third, "web", paas.StateShouldBeUp)
	if n := e.specReplicas(KindDeployment, "web"); n != 2 {
		t.Errorf("woken after a restart to %d replicas, want 2 (reaper.replicas)", n)
	}
	if n := ups("web"); n != 1 {
		t.Errorf("%d scale-ups, want 1 (adopting scales nothing)", n)
	}
}

// TestDriver_HPAIsWarnedOf: an HPA with minReplicas 1 on an app's workload is
// logged at start.
func TestDriver_HPAIsWarnedOf(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "web", 1, nil)
	hpas, err := autoscalingclient.NewForConfig(e.s.Config(kubetest.AdminUser))
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &one, MaxReplicas: 3,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
	}
	if _, err := hpas.HorizontalPodAutoscalers(e.ns).Create(context.Background(), h, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.driver(Config{Apps: []AppConfig{{ID: "web"}}}, kubetest.AdminUser)
	if e.logs.Lines("HorizontalPodAutoscaler with minReplicas", e.ns+"/web") != 1 {
		t.Errorf("no warning of the HPA; logs:\n%s", e.logs.String())
	}
}

// TestDriver_ReadyProbeMustPassToo: an app with a ready probe is up only once
// the probe passes, after its workload counts a ready replica.
func TestDriver_ReadyProbeMustPassToo(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "web", 0, nil)
	e.s.AutoReady(t, e.ns)
	addr := freeport.Addr(t)
	d := e.driver(Config{Apps: []AppConfig{{ID: "web", Ready: &probe.Config{TCP: addr}}}}, kubetest.AdminUser)
	if err := d.Start(t.Context(), paas.App{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitFor, "the driver seeing a ready replica", func() bool {
		a, err := d.lookup("web")
		if err != nil {
			return false
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.v != nil && a.v.readyNow()
	})
	// Ready replica, but nothing listens where the probe looks: not up.
	if obs := observe(t, d, "web"); obs.State != paas.StateWantsToBeUp {
		t.Fatalf("ready replica, probe failing: %s, want WANTS_TO_BE_UP", obs.State)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	waitState(t, d, "web", paas.StateShouldBeUp)
}

// TestCheckHPAs: reaper check's look at the cluster names the HPAs with
// minReplicas ≥ 1 on an app's workload (declared, or opted in by annotation),
// not those on other workloads, and says as a warning, not an error, when it
// may not list HPAs or cannot reach the cluster.
func TestCheckHPAs(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "web", 0, nil)
	e.s.StatefulSet(t, e.ns, "db", 0, map[string]string{AnnotationEnable: "true", AnnotationAppID: "pg"})
	e.s.Deployment(t, e.ns, "other", 1, nil)
	hpas, err := autoscalingclient.NewForConfig(e.s.Config(kubetest.AdminUser))
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	for _, tg := range []struct{ kind, name string }{{"Deployment", "web"}, {"StatefulSet", "db"}, {"Deployment", "other"}} {
		h := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: tg.name + "-hpa"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: tg.kind, Name: tg.name}},
		}
		if tg.name == "web" {
			h.Spec.MinReplicas = &one
		}
		if _, err := hpas.HorizontalPodAutoscalers(e.ns).Create(t.Context(), h, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Kubeconfig: e.s.Kubeconfig(t, kubetest.AdminUser), Namespaces: []string{e.ns}, Apps: []AppConfig{{ID: "web"}}}
	got := CheckHPAs(t.Context(), Options{Config: cfg})
	if len(got) != 2 || !strings.Contains(got[0]+got[1], "app web: the HorizontalPodAutoscaler "+e.ns+"/web-hpa (minReplicas 1) targets its workload Deployment "+e.ns+"/web") ||
		!strings.Contains(got[0]+got[1], "app pg: the HorizontalPodAutoscaler "+e.ns+"/db-hpa") {
		t.Errorf("CheckHPAs = %q, want the warnings of web and pg only", got)
	}

	t.Run("Forbidden", func(t *testing.T) {
		r := shippedRole(t)
		r.Rules = without(r.Rules, "horizontalpodautoscalers")
		e.s.Bind(t, e.ns, kubetest.ReaperUser, r)
		c := cfg
		c.Kubeconfig = e.s.Kubeconfig(t, kubetest.ReaperUser)
		got := CheckHPAs(t.Context(), Options{Config: c})
		if len(got) != 1 || !strings.Contains(got[0], "the HPA check is incomplete") || !strings.Contains(got[0], "403 Forbidden") || !strings.Contains(got[0], "an optional right") {
			t.Errorf("CheckHPAs without the HPA rule = %q, want one line naming the 403 and the optional right", got)
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		c := cfg
		c.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
		addr := freeport.Addr(t)
		kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://" + addr + "\"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
		if err := os.WriteFile(c.Kubeconfig, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		got := CheckHPAs(t.Context(), Options{Config: c})
		if len(got) != 1 || !strings.Contains(got[0], "the HPA check is incomplete") || !strings.Contains(got[0], addr) {
			t.Errorf("CheckHPAs of a cluster nothing answers for = %q, want one line naming the address", got)
		}
	})
}

// A declared app's busy_url (paas.kubernetes.apps[]) is its hint, over its
// workload's reaper.busy_url annotation; the annotation's grace period is
// still read.
func TestDriver_DeclaredBusyURLWinsOverTheAnnotation(t *testing.T) {
	e := newEnv(t)
	e.s.Deployment(t, e.ns, "worker", 0, map[string]string{"reaper.busy_url": "http://annotated:8080/busy", "reaper.grace_period": "2m"})
	d := e.driver(Config{Apps: []AppConfig{{ID: "worker", BusyURL: "http://declared:8080/busy", BusyMax: conf.Duration(time.Minute)}}}, kubetest.AdminUser)
	observe(t, d, "worker")
	h, err := d.AppPolicy(paas.App{ID: "worker"})
	if err != nil || h.BusyURL != "http://declared:8080/busy" || h.BusyMax != time.Minute || h.GracePeriod != 2*time.Minute ||
		h.BusyFrom != "config paas.kubernetes.apps[].busy_url" {
		t.Errorf("AppPolicy: %+v, %v; want the declared busy_url and 1m, and the annotation's 2m grace period", h, err)
	}
}
