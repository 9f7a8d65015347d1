package kubetest

import (
	"context"
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
)

var kube *Server

func TestMain(m *testing.M) { os.Exit(Main(m, Options{}, &kube)) }

// TestServer_ReaperTokenHasTheRightsOfItsRole checks the token file and RBAC:
// the reaper user is refused (403) until a Role is bound to it, then allowed
// what the Role gives and nothing else.
func TestServer_ReaperTokenHasTheRightsOfItsRole(t *testing.T) {
	s := Need(t, kube)
	ns := s.Namespace(t)
	s.Deployment(t, ns, "web", 1, nil)
	ctx := context.Background()
	apps, err := appsclient.NewForConfig(s.Config(ReaperUser))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("get before the role: %v, want 403", err)
	}
	s.Bind(t, ns, ReaperUser, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}}},
	})
	if _, err := apps.Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("get with the role: %v", err)
	}
	if _, err := apps.Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("get scale (not in the role): %v, want 403", err)
	}
	s.SetReady(t, "Deployment", ns, "web", 1)
	d, err := s.Admin(t).Apps.Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || d.Status.ReadyReplicas != 1 || d.Status.ObservedGeneration != d.Generation {
		t.Fatalf("after SetReady: %+v, %v", d.Status, err)
	}
}

func TestNsName(t *testing.T) {
	for _, name := range []string{"TestX/Sub_test", "T", "x/" + string(make([]byte, 80))} {
		got := nsName(name)
		if len(got) > 63 || got[0] == '-' {
			t.Errorf("nsName(%q) = %q: not a DNS label", name, got)
		}
	}
}
