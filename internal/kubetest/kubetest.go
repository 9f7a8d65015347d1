// Package kubetest runs a real Kubernetes control plane for tests: etcd and
// kube-apiserver (and, when asked, kube-controller-manager) on free loopback
// ports, from binaries built by `make kube` (scripts/kube-bins.sh) into
// $REAPER_KUBE_BINS, default ~/.cache/reaper/kubernetes/v1.37.2. Nothing is
// downloaded and no container runs: no kubelet can run here, so Pods never
// really start, and tests set readiness through the status subresource (of the
// Pods when the controller manager runs, of the workload when it does not), as
// envtest users do.
//
// One control plane serves a whole test package (it takes ~4 s and ~330 MB to
// start): TestMain calls Main, each test calls Need and takes a namespace of its
// own (Namespace). Authentication is by bearer tokens (a token file): the admin
// token is in system:masters; the reaper token has no rights until a test binds
// a Role to it, so RBAC can be tested with exactly the rights a Role gives.
//
// Files: kubetest.go (finding the binaries, Main, Need), server.go (starting
// and stopping the processes), objects.go (namespaces, workloads, readiness,
// role bindings, kubeconfig files for tests), auto.go (AutoReady, standing in
// for the controllers and the kubelet, and CountScaleUps), role.go (a Role
// read from a YAML file).
//
// When the binaries are missing, tests skip, or fail when the environment sets
// REAPER_REQUIRE_KUBE=1 (as CI does).
package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv names the environment variable that turns missing binaries from a
// skip into a failure.
const RequireEnv = "REAPER_REQUIRE_KUBE"

// BinEnv names the environment variable that gives the directory of the
// binaries; without it, DefaultBins.
const BinEnv = "REAPER_KUBE_BINS"

// Version is the Kubernetes version `make kube` builds.
const Version = "v1.37.2"

// The users of the token file.
const (
	// AdminUser is in system:masters: every right.
	AdminUser = "admin"
	// ReaperUser has no right until a test binds a Role to it.
	ReaperUser = "reaper"
)

// Options say what to run besides etcd and kube-apiserver.
type Options struct {
	// ControllerManager runs kube-controller-manager with the deployment,
	// replicaset and statefulset controllers: Deployments make ReplicaSets and
	// Pods, and a workload's status follows its Pods'. Without it, nothing
	// writes a workload's status but the test.
	ControllerManager bool
}

// DefaultBins is where `make kube` builds the binaries when REAPER_KUBE_BINS
// is not set.
func DefaultBins() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(dir, "reaper", "kubernetes", Version)
}

// Bins returns the directory of the binaries opts needs, or an error that says
// which is missing and how to build it.
func Bins(opts Options) (string, error) {
	dir := os.Getenv(BinEnv)
	if dir == "" {
		dir = DefaultBins()
	}
	need := []string{"etcd", "kube-apiserver"}
	if opts.ControllerManager {
		need = append(need, "kube-controller-manager")
	}
	for _, b := range need {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("kubetest: no %s in %s: run make kube (or set %s)", b, dir, BinEnv)
		}
	}
	return dir, nil
}

// Main starts a control plane for the test package, runs its tests, and stops
// it; TestMain passes its result to os.Exit:
//
//	var kube *kubetest.Server
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, kubetest.Options{}, &kube)) }
//
// Without the binaries, the tests run with *srv nil (Need skips them), unless
// REAPER_REQUIRE_KUBE=1: then Main fails at once. A control plane that does not
// start fails the package.
func Main(m *testing.M, opts Options, srv **Server) int {
	bins, err := Bins(opts)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "%v, and %s=1\n", err, RequireEnv)
			return 1
		}
		skipWhy = err.Error()
		return m.Run()
	}
	s, err := Start(bins, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	code := m.Run()
	s.Stop()
	return code
}

// skipWhy is why Need skips: the binaries Main did not find.
var skipWhy = "kubetest: Main did not start a control plane"

// Need returns s, or skips the test when Main found no binaries (fails it with
// REAPER_REQUIRE_KUBE=1).
func Need(t testing.TB, s *Server) *Server {
	t.Helper()
	if s != nil {
		return s
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s, and %s=1", skipWhy, RequireEnv)
	}
	t.Skipf("%s; set %s=1 to fail instead of skipping", skipWhy, RequireEnv)
	return nil
}
