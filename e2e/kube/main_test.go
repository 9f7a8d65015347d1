// Package kube runs reaper serve, single and as a three-node cluster, with the
// Kubernetes driver against a real control plane: etcd, kube-apiserver and
// kube-controller-manager (internal/kubetest), so Deployments make
// ReplicaSets and Pods as in a cluster. No kubelet can run here (no images),
// so the Pods never run: the tests mark them Ready through their status
// subresource (kubetest.MarkPodsReady), and the deployment controller then
// counts them ready, as it would a kubelet's report. The traffic a route
// forwards goes to a real process on loopback (cmd/demoapp) standing in for
// the workload's Service: reaper scales the workload and waits for its
// readiness through the apiserver, then proxies to that address.
//
// It is a package of its own, apart from e2e, so that CI can run the other
// packages while the control plane's binaries build (.ci/run).
package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/kubetest"
)

var (
	kube *kubetest.Server
	bins struct{ reaper, demoapp string }
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if _, err := kubetest.Bins(kubetest.Options{ControllerManager: true}); err != nil {
		return kubetest.Main(m, kubetest.Options{ControllerManager: true}, &kube) // skips, or fails when required
	}
	dir, err := os.MkdirTemp("", "reaper-e2e-kube-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := clusterenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bins.reaper, bins.demoapp = filepath.Join(dir, "reaper"), filepath.Join(dir, "demoapp")
	for out, pkg := range map[string]string{bins.reaper: "./cmd/reaper", bins.demoapp: "./cmd/demoapp"} {
		if err := clusterenv.Build(context.Background(), root, out, pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return kubetest.Main(m, kubetest.Options{ControllerManager: true}, &kube)
}
