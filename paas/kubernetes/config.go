package kubernetes

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// Workload kinds.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// MaxReplicas bounds a replica count in the file or an annotation: a typo
// (10000) must not wake a fleet.
const MaxReplicas = 1000

// Config is the driver's section, paas.kubernetes:
//
//	kubeconfig: ~/.kube/config      # default: in-cluster, else $KUBECONFIG
//	namespaces: [shop]              # watched; empty: every namespace
//	annotations: true               # discover workloads annotated reaper.enable: "true"
//	apps: [{id: web, kind: Deployment, name: web, namespace: shop, replicas: 2}]
type Config struct {
	// Kubeconfig is the kubeconfig file; empty: the in-cluster configuration
	// (the Pod's service account), else the file $KUBECONFIG names (else
	// ~/.kube/config).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty: its current-context.
	Context string `yaml:"context"`
	// Namespaces are the namespaces watched; empty: every namespace (which
	// needs a ClusterRole). Declared apps must be in one of them.
	Namespaces []string `yaml:"namespaces"`
	// Annotations turns the discovery of workloads from their annotations
	// (reaper.enable: "true") on or off; absent: on.
	Annotations *bool `yaml:"annotations"`
	// Apps are the workloads declared in the file.
	Apps []AppConfig `yaml:"apps"`
}

// AppConfig is one workload of paas.kubernetes.apps[].
type AppConfig struct {
	// ID names the app in routes (app_id). Required, unique.
	ID string `yaml:"id"`
	// Kind is Deployment (the default) or StatefulSet.
	Kind string `yaml:"kind"`
	// Name is the workload's name; default: the id.
	Name string `yaml:"name"`
	// Namespace is the workload's namespace; default: the only watched
	// namespace, else "default".
	Namespace string `yaml:"namespace"`
	// Replicas is the count a wake scales to, unless the workload's
	// reaper.replicas annotation says another; 0: the count it had before it
	// was put to sleep (see docs/kubernetes.md, "The awake replica count").
	Replicas int32 `yaml:"replicas"`
	// Ready is a readiness probe (through the workload's Service) that must
	// pass too, after the workload counts a ready replica.
	Ready *probe.Config `yaml:"ready"`
	// BusyURL is asked before the app is put to sleep (200: busy, 204 or
	// 404: idle), when no route of it sets reaper's busy_url: a route-less
	// worker of a group. It wins over the reaper.busy_url annotation.
	BusyURL string `yaml:"busy_url"`
	// BusyMax is how long a failing BusyURL keeps the app up; 0: an hour.
	BusyMax conf.Duration `yaml:"busy_max"`
}

// AnnotationsOn reports whether discovery from annotations is on.
func (c *Config) AnnotationsOn() bool { return c.Annotations == nil || *c.Annotations }

// AppIDs returns the ids of the declared apps.
func (c *Config) AppIDs() []string {
	ids := make([]string, 0, len(c.Apps))
	for _, a := range c.Apps {
		ids = append(ids, a.ID)
	}
	return ids
}

// resolved returns the app with its defaults filled in, for the namespaces
// given.
func (a AppConfig) resolved(namespaces []string) AppConfig {
	if a.Kind == "" {
		a.Kind = KindDeployment
	}
	if a.Name == "" {
		a.Name = a.ID
	}
	if a.Namespace == "" {
		a.Namespace = "default"
		if len(namespaces) == 1 {
			a.Namespace = namespaces[0]
		}
	}
	return a
}

// Validate checks the section; path names it (paas.kubernetes).
func (c *Config) Validate(path string, errs *conf.Errors) {
	if c.Kubeconfig != "" {
		if _, err := os.Stat(c.Kubeconfig); err != nil {
			errs.Add(conf.Key(path, "kubeconfig"), "%s", conf.Unreadable(c.Kubeconfig, err))
		}
	}
	seenNS := map[string]int{}
	for i, ns := range c.Namespaces {
		p := conf.Index(conf.Key(path, "namespaces"), i)
		if j, dup := seenNS[ns]; dup {
			errs.Add(p, "%s is already listed at %s", strconv.Quote(ns), conf.Index(conf.Key(path, "namespaces"), j))
		} else if !dnsLabel(ns) {
			errs.Add(p, "%s is not a namespace name (lowercase letters, digits and '-', at most 63)", strconv.Quote(ns))
		}
		seenNS[ns] = i
	}
	seen := map[string]int{}
	for i, a := range c.Apps {
		ap := conf.Index(conf.Key(path, "apps"), i)
		a.validate(ap, c.Namespaces, errs)
		if j, dup := seen[a.ID]; dup && a.ID != "" {
			errs.Add(conf.Key(ap, "id"), "%s is already the id of %s", strconv.Quote(a.ID), conf.Index(conf.Key(path, "apps"), j))
		}
		seen[a.ID] = i
	}
}

// validate checks one app.
func (a AppConfig) validate(path string, namespaces []string, errs *conf.Errors) {
	switch {
	case a.ID == "":
		errs.Add(conf.Key(path, "id"), "is required")
	case !paas.ValidName(a.ID):
		errs.Add(conf.Key(path, "id"), "%s must be letters, digits, '.', '-' or '_'", strconv.Quote(a.ID))
	}
	if a.Kind != "" && a.Kind != KindDeployment && a.Kind != KindStatefulSet {
		errs.Add(conf.Key(path, "kind"), "%s is not a kind reaper scales (use Deployment or StatefulSet)", strconv.Quote(a.Kind))
	}
	r := a.resolved(namespaces)
	if !dnsSubdomain(r.Name) {
		errs.Add(conf.Key(path, "name"), "%s is not a workload name (lowercase letters, digits, '-' and '.', at most 253)", strconv.Quote(r.Name))
	}
	switch {
	case !dnsLabel(r.Namespace):
		errs.Add(conf.Key(path, "namespace"), "%s is not a namespace name", strconv.Quote(r.Namespace))
	case len(namespaces) > 0 && !slices.Contains(namespaces, r.Namespace):
		errs.Add(conf.Key(path, "namespace"), "%s is not watched: add it to paas.kubernetes.namespaces", strconv.Quote(r.Namespace))
	}
	if a.Replicas < 0 || a.Replicas > MaxReplicas {
		errs.Add(conf.Key(path, "replicas"), "must be from 1 to %d (0 or absent: the count before it slept), not %d", MaxReplicas, a.Replicas)
	}
	if a.Ready != nil {
		a.Ready.Check(conf.Key(path, "ready"), errs)
	}
	if a.BusyURL != "" {
		if p := paas.CheckBusyURL(a.BusyURL); p != "" {
			errs.Add(conf.Key(path, "busy_url"), "%s", p)
		}
	}
	if a.BusyMax != 0 {
		if p := paas.CheckBusyMax(a.BusyMax.D()); p != "" {
			errs.Add(conf.Key(path, "busy_max"), "%s", p)
		}
	}
}

// dnsLabel reports whether s is an RFC 1123 label (a namespace name).
func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// dnsSubdomain reports whether s is an RFC 1123 subdomain (a workload name).
func dnsSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dnsLabel(part) {
			return false
		}
	}
	return true
}
