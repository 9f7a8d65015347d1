package kubernetes

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reapergw/reaper/internal/kubetest"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// TestDriver_Contract runs paas.Client's contract against a real apiserver:
// two declared Deployments at 0, and one whose wakes fail (its progress
// deadline passes). kubetest.AutoReady plays the controllers and the kubelet
// (no kubelet can run here): a workload scaled up gets a status whose
// replicas are all ready.
func TestDriver_Contract(t *testing.T) {
	paastest.Run(t, func(t *testing.T) paastest.Harness {
		e := newEnv(t)
		for _, name := range []string{"web", "api", "broken"} {
			e.s.Deployment(t, e.ns, name, 0, nil)
		}
		e.s.AutoReady(t, e.ns, "broken")
		ups := e.s.CountScaleUps(t, e.ns)
		d := e.driver(Config{Apps: []AppConfig{{ID: "web", Replicas: 2}, {ID: "api"}, {ID: "broken"}}}, kubetest.AdminUser)
		apps := e.s.Admin(t).Apps
		return paastest.Harness{
			Client: d,
			Apps:   [2]paas.App{{ID: "web"}, {ID: "api"}},
			Starts: func(_ *testing.T, app paas.App) int { return ups(app.ID) },
			Running: func(t *testing.T, app paas.App) int {
				dep, err := apps.Deployments(e.ns).Get(context.Background(), app.ID, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if *dep.Spec.Replicas > 0 {
					return 1 // an app runs, however many replicas it has
				}
				return 0
			},
			StopOutside: func(t *testing.T, app paas.App) {
				sc, err := apps.Deployments(e.ns).GetScale(context.Background(), app.ID, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				sc.Spec.Replicas = 0
				if _, err := apps.Deployments(e.ns).UpdateScale(context.Background(), app.ID, sc, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			Failing: paas.App{ID: "broken"},
		}
	})
}
