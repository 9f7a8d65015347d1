package kubernetes

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

func TestConfig_ValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"empty", Config{}, ""},
		{"declared", Config{Namespaces: []string{"shop"}, Apps: []AppConfig{{ID: "web", Replicas: 2}, {ID: "db", Kind: KindStatefulSet}}}, ""},
		{"no id", Config{Apps: []AppConfig{{Name: "web"}}}, "paas.kubernetes.apps[0].id: is required"},
		{"bad kind", Config{Apps: []AppConfig{{ID: "web", Kind: "DaemonSet"}}}, `paas.kubernetes.apps[0].kind: "DaemonSet" is not a kind`},
		{"bad name", Config{Apps: []AppConfig{{ID: "Web_1"}}}, `paas.kubernetes.apps[0].name: "Web_1" is not a workload name`},
		{"namespace not watched", Config{Namespaces: []string{"a", "b"}, Apps: []AppConfig{{ID: "web", Namespace: "c"}}}, `paas.kubernetes.apps[0].namespace: "c" is not watched`},
		{"default namespace not watched", Config{Namespaces: []string{"a", "b"}, Apps: []AppConfig{{ID: "web"}}}, `paas.kubernetes.apps[0].namespace: "default" is not watched`},
		{"duplicate id", Config{Apps: []AppConfig{{ID: "web"}, {ID: "web", Name: "other"}}}, `paas.kubernetes.apps[1].id: "web" is already the id of paas.kubernetes.apps[0]`},
		{"replicas", Config{Apps: []AppConfig{{ID: "web", Replicas: 5000}}}, "paas.kubernetes.apps[0].replicas: must be from 1 to 1000"},
		{"bad namespace", Config{Namespaces: []string{"Shop"}}, `paas.kubernetes.namespaces[0]: "Shop" is not a namespace name`},
		{"duplicate namespace", Config{Namespaces: []string{"a", "a"}}, `paas.kubernetes.namespaces[1]: "a" is already listed`},
		{"busy_url", Config{Apps: []AppConfig{{ID: "web", BusyURL: "http://web.shop:8080/busy", BusyMax: conf.Duration(time.Hour)}}}, ""},
		{"bad busy_url", Config{Apps: []AppConfig{{ID: "web", BusyURL: "http://u:p@web/busy"}}}, "paas.kubernetes.apps[0].busy_url: must not hold a user or password"},
		{"bad busy_max", Config{Apps: []AppConfig{{ID: "web", BusyMax: conf.Duration(time.Millisecond)}}}, "paas.kubernetes.apps[0].busy_max: 1ms is not from 1s to 168h0m0s"},
		{"kubeconfig", Config{Kubeconfig: "/nonexistent/kubeconfig"}, "paas.kubernetes.kubeconfig:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var errs conf.Errors
			tc.cfg.Validate("paas.kubernetes", &errs)
			err := errs.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("valid: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAppConfig_DefaultsFromTheOnlyNamespace(t *testing.T) {
	a := AppConfig{ID: "web"}.resolved([]string{"shop"})
	if a.Kind != KindDeployment || a.Name != "web" || a.Namespace != "shop" {
		t.Errorf("resolved: %+v", a)
	}
	if a := (AppConfig{ID: "web"}).resolved(nil); a.Namespace != "default" {
		t.Errorf("no namespaces: namespace %q, want default", a.Namespace)
	}
}

func TestAnnotations(t *testing.T) {
	if n, err := replicasOf(map[string]string{AnnotationReplicas: "3"}); n != 3 || err != nil {
		t.Errorf("replicas 3: %d, %v", n, err)
	}
	for _, bad := range []string{"0", "-1", "x", "1001"} {
		if _, err := replicasOf(map[string]string{AnnotationReplicas: bad}); err == nil {
			t.Errorf("replicas %q: no error", bad)
		}
	}
	for v, want := range map[string]time.Duration{"90": 90 * time.Second, "15m": 15 * time.Minute, "": 0} {
		if g, err := gracePeriodOf(map[string]string{AnnotationGracePeriod: v}); g != want || err != nil {
			t.Errorf("grace_period %q: %v, %v; want %v", v, g, err, want)
		}
	}
	if _, err := gracePeriodOf(map[string]string{AnnotationGracePeriod: "soon"}); err == nil {
		t.Error("grace_period soon: no error")
	}
	if u, m, err := busyOf(map[string]string{AnnotationBusyURL: "http://w:8080/busy", AnnotationBusyMax: "30m"}); u != "http://w:8080/busy" || m != 30*time.Minute || err != nil {
		t.Errorf("busy_url: %q, %v, %v", u, m, err)
	}
	if u, m, err := busyOf(map[string]string{AnnotationBusyMax: "30m"}); u != "" || m != 0 || err != nil {
		t.Errorf("busy_max alone: %q, %v, %v; want nothing", u, m, err)
	}
	for ann, want := range map[[2]string]string{
		{"w:8080/busy?token=s3cret", ""}:  "annotation reaper.busy_url: is not an http(s) URL",
		{"http://w/busy", "soon"}:         `annotation reaper.busy_max: "soon" is not a duration`,
		{"http://w/busy", "8d"}:           `annotation reaper.busy_max: "8d" is not a duration`,
		{"http://w/busy", "200h"}:         "annotation reaper.busy_max: 200h0m0s is not from 1s to 168h0m0s",
		{"https://u:s3cret@w/busy", "1h"}: "annotation reaper.busy_url: must not hold a user or password",
	} {
		u, _, err := busyOf(map[string]string{AnnotationBusyURL: ann[0], AnnotationBusyMax: ann[1]})
		if u != "" || err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: %q, %v; want none and %q, no token", ann, u, err, want)
		}
	}
	if id, err := appID(map[string]string{}, "web"); id != "web" || err != nil {
		t.Errorf("app id default: %q, %v", id, err)
	}
	if _, err := appID(map[string]string{AnnotationAppID: "a/b"}, "web"); err == nil {
		t.Error("app id a/b: no error")
	}
}
