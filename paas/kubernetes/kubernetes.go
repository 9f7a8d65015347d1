// Package kubernetes is reaper's driver for Deployments and StatefulSets on a
// Kubernetes cluster (paas.driver: kubernetes). It puts a workload to sleep by
// scaling it to zero through its scale subresource, and wakes it by scaling it
// back, mapping that world onto the Clever Cloud vocabulary of package paas as
// the docker driver does:
//
//   - spec.replicas 0: SHOULD_BE_DOWN (after a stop of ours, deployment OK
//     UNDEPLOY);
//   - spec.replicas ≥ 1, no ready replica of the current generation yet
//     (status.observedGeneration < metadata.generation, or readyReplicas 0):
//     WANTS_TO_BE_UP, deployment WIP DEPLOY;
//   - status.readyReplicas ≥ 1 of the current generation (and the app's ready
//     probe passes, when it has one): SHOULD_BE_UP, deployment OK DEPLOY;
//   - a wake of ours whose Deployment reports ProgressDeadlineExceeded:
//     deployment FAIL DEPLOY with the apiserver's message, WANTS_TO_BE_UP
//     until the driver has scaled it back to 0, then SHOULD_BE_DOWN.
//
// A workload scaled up or down by someone else (kubectl scale, a GitOps sync)
// is observed as the docker driver observes a container started or stopped by
// hand: up, it is WANTS_TO_BE_UP until ready; down, it is asleep and the
// next request wakes it (no paas.Exit: a deliberate scale is not a crash).
//
// Apps are declared in the file (paas.kubernetes.apps[]) or discovered from the
// annotations of the workloads that opt in (reaper.enable: "true",
// annotations.go). One informer per kind and watched namespace follows the
// workloads (a list, then a watch, re-listed when the watch expires), so Observe
// answers from memory and watchers (paas.Watcher) hear of every change at once:
// no polling.
//
// The awake replica count: the scale subresource carries no annotations, and the
// driver has no right to patch the workload itself, so it cannot write down
// the count it scaled from. A wake scales to, in this order: the workload's
// reaper.replicas annotation (written by its owner, kept by GitOps), the app's
// replicas in the file, the last count ≥ 1 this process saw (every node of a
// cluster runs the informers, so a new leader saw it too), else 1, with a
// warning (docs/kubernetes.md).
//
// Least privilege: get, list and watch on deployments and statefulsets, and
// get, patch and update on their scale subresource, in the watched namespaces
// (examples/kubernetes/rbac.yaml). Listing HorizontalPodAutoscalers, to warn of
// one that would undo a scale to zero (hpa.go), is optional: refused, the check
// is skipped and says so once. A refusal of anything else is paas.ErrAuth
// naming the verb, the resource and the namespace.
//
// Files: kubernetes.go (this), config.go (paas.kubernetes), driver.go (the
// Driver: New, Observe, Watch, Close), app.go (an app's state from its
// workload, pure), informers.go (the informers), record.go (what a change of
// a workload does: discovery, the log, the ready probe, a failed wake scaled
// back), annotations.go (the reaper.* annotations), scale.go (Start and Stop
// through the scale subresource), hpa.go (HorizontalPodAutoscalers),
// client.go (the REST client and its scheme), errors.go (the apiserver's
// errors as package paas's).
package kubernetes

import (
	"errors"
	"log/slog"

	"k8s.io/client-go/rest"
)

// Options configure a Driver.
type Options struct {
	// Config is the paas.kubernetes section, validated again by New.
	Config Config
	// Logger receives the driver's events; nil discards them.
	Logger *slog.Logger
	// UserAgent is sent to the apiserver; empty: "reaper".
	UserAgent string
	// Lookup reads reaper's environment (KUBECONFIG); nil: os.LookupEnv.
	Lookup func(string) (string, bool)
	// REST, when set, is used instead of Config.Kubeconfig (tests, embedding).
	REST *rest.Config
}

// Errors of the driver, besides those of package paas.
var (
	// ErrClosed: the driver was closed; it scales nothing any more.
	ErrClosed = errors.New("kubernetes: driver closed")
)
