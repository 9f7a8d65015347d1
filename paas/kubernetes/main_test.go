package kubernetes

import (
	"log/slog"
	"os"
	"testing"

	"github.com/reapergw/reaper/internal/kubetest"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/paas"
)

// kube is the package's control plane: etcd and kube-apiserver, without the
// controller manager. No kubelet can run here, so the tests play the
// controllers and the kubelet by writing the workloads' status through the
// status subresource (kubetest.AutoReady, SetReady), as envtest users do.
var kube *kubetest.Server

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, kubetest.Options{}, &kube)) }

// env is one test's namespace on the control plane.
type env struct {
	t    *testing.T
	s    *kubetest.Server
	ns   string
	logs logtest.Buffer
}

func newEnv(t *testing.T) *env {
	s := kubetest.Need(t, kube)
	return &env{t: t, s: s, ns: s.Namespace(t)}
}

// driver starts a driver as user (kubetest.AdminUser, ReaperUser) through a
// kubeconfig file, watching the test's namespace unless cfg names others;
// closed in t.Cleanup.
func (e *env) driver(cfg Config, user string) *Driver {
	e.t.Helper()
	cfg.Kubeconfig = e.s.Kubeconfig(e.t, user)
	if cfg.Namespaces == nil {
		cfg.Namespaces = []string{e.ns}
	}
	d, err := New(Options{Config: cfg, Logger: e.logs.Logger(slog.LevelDebug)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = d.Close() })
	return d
}

// observe observes the app, failing the test on an error.
func observe(t *testing.T, d *Driver, id string) paas.Observation {
	t.Helper()
	obs, err := d.Observe(t.Context(), paas.App{ID: id})
	if err != nil {
		t.Fatalf("Observe(%s): %v", id, err)
	}
	return obs
}
