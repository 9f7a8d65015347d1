package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/kubetest"
)

// Part K: the Kubernetes driver's wake, against a real apiserver (etcd and
// kube-apiserver from make kube; no controller manager, no kubelet). A
// Deployment at 0 is woken by a held request; the bench waits until reaper
// has scaled it up, then writes its status as ready (as the controllers
// would once a Pod is ready) and times from that write to the held request's
// answer: the watch's delivery, reaper's release and the proxying. The demo
// app stands in for the workload's Service. The Docker driver's figure of the
// same step is printed beside it (kubedocker.go); part E's "port open → held
// request answered" is the process driver's.

const (
	kubeRounds     = 10
	kubeHost       = "kube.test"
	kubeNamespace  = "bench"
	targetKubeWake = 10 * time.Millisecond
)

// errNoKube skips part K: the control plane is not built.
var errNoKube = errors.New("bench: no kube-apiserver and etcd (make kube)")

func runKube(ctx context.Context, e *env) ([]verdict, error) {
	bins, err := kubetest.Bins(kubetest.Options{})
	if err != nil {
		return nil, errNoKube
	}
	rounds := kubeRounds
	if e.opts.quick {
		rounds = 3
	}
	got, err := kubeRun(ctx, e, bins, rounds)
	if err != nil {
		return nil, err
	}
	m := median(got)
	vs := []verdict{{"K", "Kubernetes: Deployment ready → held request answered, median", millis(m), "≤ " + millis(targetKubeWake), m <= targetKubeWake, roundsText(got)}}
	dock, err := runKubeDocker(ctx, e, rounds)
	switch {
	case errors.Is(err, errNoDocker):
		e.progressf("K: %v: the Docker driver's figure is left out", err)
	case err != nil:
		return nil, err
	default:
		vs = append(vs, verdict{"K", "Docker: container healthy → held request answered, median (beside the above)", millis(median(dock)), "none (comparison)", true, roundsText(dock)})
	}
	printKube(e.out, got, dock, err)
	return vs, nil
}

// kubeRun measures the Kubernetes driver's rounds; the control plane and
// reaper are stopped before it returns.
func kubeRun(ctx context.Context, e *env, bins string, rounds int) ([]time.Duration, error) {
	e.progressf("K: starting etcd and kube-apiserver")
	s, err := kubetest.Start(bins, kubetest.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	apps, err := kubeScene(ctx, s)
	if err != nil {
		return nil, err
	}
	node, err := kubeReaper(ctx, e, s)
	if err != nil {
		return nil, err
	}
	defer node.shutdown()
	c := clusterenv.NewClient(60 * time.Second)
	defer c.CloseIdleConnections()
	var got []time.Duration
	for r := range rounds {
		e.progressf("K: round %d/%d", r+1, rounds)
		d, err := kubeWake(ctx, c, node.gateway, apps)
		if err != nil {
			return nil, fmt.Errorf("part K, round %d: %w", r+1, err)
		}
		got = append(got, d)
	}
	return got, nil
}

// kubeScene makes the namespace and the Deployment at 0, opted in by
// annotation.
func kubeScene(ctx context.Context, s *kubetest.Server) (appsclient.DeploymentInterface, error) {
	cfg := s.Config(kubetest.AdminUser)
	core, err := coreclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	a, err := appsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeNamespace}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	zero := int32(0)
	labels := map[string]string{"app": "kube"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kube", Annotations: map[string]string{"reaper.enable": "true", "reaper.app_id": "kube"}},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/kube:1"}}}}},
	}
	deps := a.Deployments(kubeNamespace)
	_, err = deps.Create(ctx, d, metav1.CreateOptions{})
	return deps, err
}

// kubeReaper starts the demo app (the Service's stand-in) and reaper with the
// Kubernetes driver.
func kubeReaper(ctx context.Context, e *env, s *kubetest.Server) (*reaperNode, error) {
	addr, err := startDemo(ctx, e, "kube")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.tmp, "kube-app")
	kc := filepath.Join(dir, "kubeconfig")
	if err := s.WriteKubeconfig(kc, kubetest.AdminUser); err != nil {
		return nil, err
	}
	return startReaper(ctx, e, "kube", clusterenv.Config{
		Node:   newNodeConfig("bench-kube"),
		Reaper: &clusterenv.JobConfig{JobInterval: "1s"},
		PaaS: clusterenv.PaaSConfig{Driver: "kubernetes", Kubernetes: &clusterenv.KubeConfig{
			Kubeconfig: kc, Namespaces: []string{kubeNamespace}}},
		Routes: []clusterenv.RouteConfig{reaperRoute("kube", kubeHost, addr, clusterenv.ReaperPluginConfig{
			AppID: "kube", GracePeriod: "1s", FailTimeout: "60s", APIBehavior: "hold"})},
	})
}

// kubeWake sends a request to the sleeping app, waits until reaper scaled the
// Deployment up, writes its ready status, and returns the time from that
// write (sent) to the answer. reaper puts it back to sleep after its grace
// period (1 s), which the next round waits for.
func kubeWake(ctx context.Context, c *http.Client, gateway string, deps appsclient.DeploymentInterface) (time.Duration, error) {
	if err := clusterenv.WaitStatus(ctx, c, gateway, kubeHost, "Down", 30*time.Second); err != nil {
		return 0, err
	}
	type result struct {
		a   clusterenv.Answer
		err error
	}
	ans := make(chan result, 1)
	go func() {
		_, a, err := getApp(ctx, c, gateway, kubeHost)
		ans <- result{a, err}
	}()
	var d *appsv1.Deployment
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if d, err = deps.Get(ctx, "kube", metav1.GetOptions{}); err != nil {
			return 0, err
		}
		if *d.Spec.Replicas > 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, errors.New("the Deployment was not scaled up")
		}
		clusterenv.SleepCtx(ctx, 2*time.Millisecond)
	}
	n := *d.Spec.Replicas
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":%d,"readyReplicas":%d,"availableReplicas":%d,"updatedReplicas":%d}}`, d.Generation, n, n, n, n)
	t0 := time.Now()
	if _, err := deps.Patch(ctx, "kube", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return 0, err
	}
	r := <-ans
	if r.err != nil {
		return 0, r.err
	}
	if r.a.Status != 200 {
		return 0, fmt.Errorf("the held request was answered %d", r.a.Status)
	}
	return r.a.ReceivedAt.Sub(t0), nil
}

// startDemo starts a demo app on loopback (the stand-in for a workload's
// Service, or for a container's published port) and returns its address once
// it listens.
func startDemo(ctx context.Context, e *env, name string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(e.tmp, name+"-app")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if _, err := clusterenv.StartProcess(e.clean, "demoapp ("+name+")", []string{e.demoBin, "--listen", addr, "--name", name}, os.Environ(), filepath.Join(dir, "demoapp.log")); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(clusterenv.StartTimeout); ; {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return addr, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("part K: the demo app does not listen on %s", addr)
		}
		clusterenv.SleepCtx(ctx, 10*time.Millisecond)
	}
}

// printKube prints both drivers' figures side by side; dockErr says why the
// Docker one is missing.
func printKube(w io.Writer, got, dock []time.Duration, dockErr error) {
	fmt.Fprintf(w, "\nK. The platform reports the app ready → the held request answered, %d wakes per driver (the answer from a demo app on loopback for both):\n", len(got))
	fmt.Fprintf(w, "   Kubernetes (real kube-apiserver; the Deployment's ready status written by the bench, timed from the write sent): median %s (target ≤ %s)\n", millis(median(got)), millis(targetKubeWake))
	fmt.Fprintf(w, "      rounds: %s\n", roundsText(got))
	if dockErr != nil {
		fmt.Fprintf(w, "   Docker: not measured: %v\n", dockErr)
	} else {
		fmt.Fprintf(w, "   Docker (real engine; the container's HEALTHCHECK, timed from the end of its first passing check, the engine's record): median %s\n", millis(median(dock)))
		fmt.Fprintf(w, "      rounds: %s\n", roundsText(dock))
		fmt.Fprintf(w, "   Kubernetes / Docker: %s (part E gives the process driver's port open → answered)\n", ratio(float64(median(got))/float64(median(dock))))
	}
}

// roundsText lists the figure of each round.
func roundsText(xs []time.Duration) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = millis(x)
	}
	return strings.Join(parts, " ")
}
