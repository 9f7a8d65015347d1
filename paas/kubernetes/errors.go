package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/reapergw/reaper/paas"
)

var (
	errUnavailable = paas.ErrUnavailable
	errNotWatched  = paas.ErrNotFound
	// errConflict: the workload changed between the read and the write of its
	// scale; read again.
	errConflict = errors.New("kubernetes: the workload changed meanwhile")
)

// rbacHint tells operators where the rights the driver needs are listed.
const rbacHint = "the driver needs get, list, watch on deployments and statefulsets and get, patch, update on their scale subresource (examples/kubernetes/rbac.yaml)"

// classify turns an apiserver's error about a call (verb, on what) into one
// of package paas's kinds, with a message that names the call; the token is
// never in it.
func classify(err error, verb, what string) error {
	var se apierrors.APIStatus
	msg := err.Error()
	if errors.As(err, &se) {
		msg = se.Status().Message
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && !apierrors.IsTimeout(err):
		return err
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s refused (403 Forbidden: %s); %s: %w", verb, what, msg, rbacHint, paas.ErrAuth)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %s: the apiserver refused the credential (401 Unauthorized): %w", verb, what, paas.ErrAuth)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: not found (%s): %w", verb, what, msg, paas.ErrNotFound)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s %s: %w", verb, what, errConflict)
	case apierrors.IsTooManyRequests(err):
		rl := &paas.RateLimitError{}
		if s, ok := apierrors.SuggestsClientDelay(err); ok {
			rl.RetryAfter = secs(s)
		}
		return fmt.Errorf("%s %s: %w", verb, what, rl)
	}
	return fmt.Errorf("%s %s: %s: %w", verb, what, msg, paas.ErrUnavailable)
}

// secs is a count of seconds as a duration.
func secs(s int) time.Duration { return time.Duration(s) * time.Second }
