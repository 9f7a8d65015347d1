package kubernetes

import (
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/reapergw/reaper/internal/kubetest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

// shippedRole reads the Role of examples/kubernetes/rbac.yaml, the one the
// docs tell operators to apply.
func shippedRole(t *testing.T) *rbacv1.Role {
	return kubetest.RoleFromFile(t, "../../examples/kubernetes/rbac.yaml")
}

// TestDriver_WorksWithExactlyTheShippedRole: bound to the shipped Role only,
// the driver follows, wakes and puts to sleep a workload; with the Role's
// optional HPA rule removed, it still does, and says the HPA check is
// skipped; without the scale rule, a wake is refused (403) with an error
// that names the call and the rights it needs; a namespace without the Role
// is ErrAuth too.
func TestDriver_WorksWithExactlyTheShippedRole(t *testing.T) {
	role := shippedRole(t)
	for _, tc := range []struct {
		name  string
		rules func([]rbacv1.PolicyRule) []rbacv1.PolicyRule
	}{
		{"Shipped", func(r []rbacv1.PolicyRule) []rbacv1.PolicyRule { return r }},
		{"WithoutHPAs", func(r []rbacv1.PolicyRule) []rbacv1.PolicyRule { return without(r, "horizontalpodautoscalers") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			r := role.DeepCopy()
			r.Rules = tc.rules(r.Rules)
			e.s.Bind(t, e.ns, kubetest.ReaperUser, r)
			e.s.Deployment(t, e.ns, "web", 0, map[string]string{AnnotationEnable: "true"})
			e.s.AutoReady(t, e.ns)
			d := e.driver(Config{}, kubetest.ReaperUser)
			if err := d.Start(t.Context(), paas.App{ID: "web"}); err != nil {
				t.Fatal(err)
			}
			waitState(t, d, "web", paas.StateShouldBeUp)
			if err := d.Stop(t.Context(), paas.App{ID: "web"}); err != nil {
				t.Fatal(err)
			}
			if tc.name == "WithoutHPAs" {
				testwait.For(t, waitFor, "the HPA check said skipped", func() bool { return e.logs.Lines("the HPA check is skipped") == 1 })
			} else if n := e.logs.Lines("the HPA check is skipped"); n != 0 {
				t.Errorf("with the shipped Role, the HPA check was skipped:\n%s", e.logs.String())
			}
		})
	}
	t.Run("WithoutScale", func(t *testing.T) {
		e := newEnv(t)
		r := role.DeepCopy()
		r.Rules = without(r.Rules, "deployments/scale")
		e.s.Bind(t, e.ns, kubetest.ReaperUser, r)
		e.s.Deployment(t, e.ns, "web", 0, map[string]string{AnnotationEnable: "true"})
		d := e.driver(Config{}, kubetest.ReaperUser)
		err := d.Start(t.Context(), paas.App{ID: "web"})
		if !errors.Is(err, paas.ErrAuth) || !strings.Contains(err.Error(), "get deployments/scale \"web\" in namespace "+e.ns+" refused (403 Forbidden") || !strings.Contains(err.Error(), "examples/kubernetes/rbac.yaml") {
			t.Errorf("Start without the scale rule: %v, want paas.ErrAuth naming the call, the 403 and the Role to apply", err)
		}
	})
	t.Run("NamespaceWithoutTheRole", func(t *testing.T) {
		e := newEnv(t)
		e.s.Deployment(t, e.ns, "web", 0, nil)
		d := e.driver(Config{Apps: []AppConfig{{ID: "web"}}}, kubetest.ReaperUser)
		_, err := d.Observe(t.Context(), paas.App{ID: "web"})
		if !errors.Is(err, paas.ErrAuth) || !strings.Contains(err.Error(), "403") {
			t.Errorf("Observe where the driver may not list: %v, want paas.ErrAuth with the 403", err)
		}
	})
}

// without drops the rules that name the resource.
func without(rules []rbacv1.PolicyRule, resource string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		keep := true
		for _, res := range r.Resources {
			keep = keep && res != resource
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}
