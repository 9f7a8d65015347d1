package kubetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// workload is what AutoReady and CountScaleUps read of a Deployment or a
// StatefulSet.
type workload struct {
	kind, name           string
	spec                 int32
	generation, observed int64
	ready, replicas      int32
}

func deployment(d *appsv1.Deployment) workload {
	return workload{"Deployment", d.Name, *d.Spec.Replicas, d.Generation, d.Status.ObservedGeneration, d.Status.ReadyReplicas, d.Status.Replicas}
}

func statefulSet(s *appsv1.StatefulSet) workload {
	return workload{"StatefulSet", s.Name, *s.Spec.Replicas, s.Generation, s.Status.ObservedGeneration, s.Status.ReadyReplicas, s.Status.Replicas}
}

// follow calls f with each Deployment and StatefulSet of ns as it changes,
// from now until the test ends.
func (s *Server) follow(t testing.TB, ns string, f func(workload)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	apps := s.Admin(t).Apps
	dw, err := apps.Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("kubetest: watch deployments: %v", err)
	}
	sw, err := apps.StatefulSets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("kubetest: watch statefulsets: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var ev watch.Event
			var ok bool
			select {
			case ev, ok = <-dw.ResultChan():
			case ev, ok = <-sw.ResultChan():
			}
			if !ok {
				return
			}
			switch o := ev.Object.(type) {
			case *appsv1.Deployment:
				f(deployment(o))
			case *appsv1.StatefulSet:
				f(statefulSet(o))
			}
		}
	}()
	t.Cleanup(func() { cancel(); dw.Stop(); sw.Stop(); wg.Wait() })
}

// AutoReady stands in for the controllers and the kubelet in ns, when the
// controller manager does not run: from now until the test ends, every
// Deployment and StatefulSet whose status lags behind its spec is given the
// status of a workload whose replicas are all ready (none at 0). The
// Deployments named in failing are instead told their progress deadline
// passed (ProgressDeadlineExceeded), as a wake whose Pods never become
// ready.
func (s *Server) AutoReady(t testing.TB, ns string, failing ...string) {
	t.Helper()
	apps := s.Admin(t).Apps
	s.follow(t, ns, func(w workload) {
		if w.observed >= w.generation && w.ready == w.spec && w.replicas == w.spec {
			return
		}
		st := fmt.Sprintf(`"observedGeneration":%d,"replicas":%d,"readyReplicas":%d,"availableReplicas":%d,"updatedReplicas":%d`,
			w.generation, w.spec, w.spec, w.spec, w.spec)
		if slices.Contains(failing, w.name) && w.spec > 0 {
			if w.observed >= w.generation {
				return
			}
			st = fmt.Sprintf(`"observedGeneration":%d,"replicas":%d,"readyReplicas":0,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"ReplicaSet %s has timed out progressing."}]`,
				w.generation, w.spec, w.name)
		}
		patch := []byte(`{"status":{` + st + `}}`)
		ctx := context.Background()
		var err error
		if w.kind == "Deployment" {
			_, err = apps.Deployments(ns).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		} else {
			_, err = apps.StatefulSets(ns).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		}
		if err != nil {
			t.Logf("kubetest: AutoReady: status of %s %s/%s: %v", w.kind, ns, w.name, err)
		}
	})
}

// CountScaleUps counts, from now until the test ends, the changes of the
// workloads' spec.replicas in ns from 0 to more (by name): the scale-ups the
// apiserver took, whoever asked.
func (s *Server) CountScaleUps(t testing.TB, ns string) func(name string) int {
	t.Helper()
	var mu sync.Mutex
	last := map[string]int32{}
	ups := map[string]int{}
	s.follow(t, ns, func(w workload) {
		mu.Lock()
		defer mu.Unlock()
		if prev, seen := last[w.kind+"/"+w.name]; seen && prev == 0 && w.spec > 0 {
			ups[w.name]++
		}
		last[w.kind+"/"+w.name] = w.spec
	})
	return func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return ups[name]
	}
}
