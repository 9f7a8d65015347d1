package kubetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
)

// Clients are the admin's typed clients, for tests to set the scene.
type Clients struct {
	Apps appsclient.AppsV1Interface
	Core coreclient.CoreV1Interface
	RBAC rbacclient.RbacV1Interface
}

var (
	clientsMu sync.Mutex
	clients   = map[*Server]*Clients{}
)

// Admin returns the admin's clients (every right).
func (s *Server) Admin(t testing.TB) *Clients {
	t.Helper()
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c := clients[s]; c != nil {
		return c
	}
	cfg := s.Config(AdminUser)
	a, err := appsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coreclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rbacclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clients[s] = &Clients{Apps: a, Core: c, RBAC: r}
	return clients[s]
}

// Namespace creates a namespace for the test, named after it, and returns its
// name. It is deleted in t.Cleanup (without the namespace controller it stays
// Terminating: the control plane is thrown away with its package).
func (s *Server) Namespace(t testing.TB) string {
	t.Helper()
	name := nsName(t.Name())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := s.Admin(t).Core.Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = s.Admin(t).Core.Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// nsName makes a DNS label of a test's name, with a random suffix.
func nsName(test string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(test) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
				b.WriteByte('-')
			}
		}
	}
	base := strings.Trim(b.String(), "-")
	if len(base) > 50 {
		base = strings.Trim(base[:50], "-")
	}
	return fmt.Sprintf("%s-%04x", base, rand.IntN(1<<16))
}

// Kubeconfig writes a kubeconfig file for the user in a temporary directory of
// the test and returns its path.
func (s *Server) Kubeconfig(t testing.TB, user string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := os.WriteFile(path, []byte(s.kubeconfig(user)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// podTemplate is a Pod template whose image is never pulled (no kubelet runs).
func podTemplate(name string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	labels := map[string]string{"app": name}
	return &metav1.LabelSelector{MatchLabels: labels}, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/" + name + ":1"}}},
	}
}

// Deployment creates a Deployment of replicas, with the annotations given.
func (s *Server) Deployment(t testing.TB, ns, name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	t.Helper()
	sel, tpl := podTemplate(name)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel, Template: tpl},
	}
	d, err := s.Admin(t).Apps.Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: create deployment %s/%s: %v", ns, name, err)
	}
	return d
}

// StatefulSet creates a StatefulSet of replicas, with the annotations given.
func (s *Server) StatefulSet(t testing.TB, ns, name string, replicas int32, annotations map[string]string) *appsv1.StatefulSet {
	t.Helper()
	sel, tpl := podTemplate(name)
	st := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec:       appsv1.StatefulSetSpec{Replicas: &replicas, Selector: sel, Template: tpl, ServiceName: name},
	}
	st, err := s.Admin(t).Apps.StatefulSets(ns).Create(context.Background(), st, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: create statefulset %s/%s: %v", ns, name, err)
	}
	return st
}

// SetReady plays the controllers and the kubelet for a workload when the
// controller manager does not run: it writes the workload's status as if
// ready of its spec.replicas Pods were ready, for its current generation.
// kind is "Deployment" or "StatefulSet".
func (s *Server) SetReady(t testing.TB, kind, ns, name string, ready int32) {
	t.Helper()
	ctx := context.Background()
	apps := s.Admin(t).Apps
	var gen int64
	var spec int32
	switch kind {
	case "Deployment":
		d, err := apps.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
		gen, spec = d.Generation, *d.Spec.Replicas
	case "StatefulSet":
		st, err := apps.StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
		gen, spec = st.Generation, *st.Spec.Replicas
	default:
		t.Fatalf("kubetest: kind %q", kind)
	}
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":%d,"readyReplicas":%d,"availableReplicas":%d,"updatedReplicas":%d}}`,
		gen, spec, ready, ready, spec)
	var err error
	if kind == "Deployment" {
		_, err = apps.Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	} else {
		_, err = apps.StatefulSets(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	}
	if err != nil {
		t.Fatalf("kubetest: status of %s %s/%s: %v", kind, ns, name, err)
	}
}

// MarkPodsReady plays the kubelet when the controller manager runs: it marks
// every Pod of the app label name Running and Ready through the Pods' status
// subresource (the workload's controller then counts them ready), and returns
// how many it marked.
func (s *Server) MarkPodsReady(t testing.TB, ns, name string) int {
	t.Helper()
	ctx := context.Background()
	pods, err := s.Admin(t).Core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("kubetest: pods of %s/%s: %v", ns, name, err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q}]}}`, now)
	for _, p := range pods.Items {
		if _, err := s.Admin(t).Core.Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("kubetest: status of pod %s/%s: %v", ns, p.Name, err)
		}
	}
	return len(pods.Items)
}

// Bind creates the Role in ns and binds it to the user.
func (s *Server) Bind(t testing.TB, ns, user string, role *rbacv1.Role) {
	t.Helper()
	ctx := context.Background()
	r := role.DeepCopy()
	r.Namespace = ns
	r.ResourceVersion = ""
	if _, err := s.Admin(t).RBAC.Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: role %s: %v", r.Name, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-" + user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := s.Admin(t).RBAC.RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: role binding %s: %v", rb.Name, err)
	}
}
