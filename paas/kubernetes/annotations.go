package kubernetes

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
)

// The annotations a workload's owner writes (the docker driver's labels, as
// annotations: they hold any value and need no selector).
const (
	// AnnotationEnable "true" opts the workload in to discovery.
	AnnotationEnable = "reaper.enable"
	// AnnotationAppID is the app's id in routes; default: the workload's name.
	AnnotationAppID = "reaper.app_id"
	// AnnotationGracePeriod is the idle time before it sleeps (90s, 15m, or
	// seconds), over the routes' grace_period (paas.PolicyHinter).
	AnnotationGracePeriod = "reaper.grace_period"
	// AnnotationReplicas is the count a wake scales to (1 to MaxReplicas).
	AnnotationReplicas = "reaper.replicas"
	// AnnotationBusyURL is asked before the app is put to sleep (200: busy),
	// when no route of it sets a busy_url; AnnotationBusyMax bounds how long
	// a failing one keeps it up (default 1h). paas.PolicyHinter, as the
	// grace period.
	AnnotationBusyURL = "reaper.busy_url"
	AnnotationBusyMax = "reaper.busy_max"
)

// enabled reports whether the annotations opt the workload in.
func enabled(ann map[string]string) bool { return ann[AnnotationEnable] == "true" }

// appID is the id a discovered workload claims, and whether it is usable.
func appID(ann map[string]string, name string) (string, error) {
	id := ann[AnnotationAppID]
	if id == "" {
		id = name
	}
	if !paas.ValidName(id) {
		return "", fmt.Errorf("annotation %s: %q must be letters, digits, '.', '-' or '_'", AnnotationAppID, id)
	}
	return id, nil
}

// replicasOf reads reaper.replicas: 0 when absent, an error when unusable.
func replicasOf(ann map[string]string) (int32, error) {
	v, ok := ann[AnnotationReplicas]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxReplicas {
		return 0, fmt.Errorf("annotation %s: %q is not a count from 1 to %d", AnnotationReplicas, v, MaxReplicas)
	}
	return int32(n), nil
}

// gracePeriodOf reads reaper.grace_period: 0 when absent, an error when
// unusable. A bare number is seconds, as everywhere in reaper's files.
func gracePeriodOf(ann map[string]string) (time.Duration, error) {
	v, ok := ann[AnnotationGracePeriod]
	if !ok || v == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 && n < 1e7 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("annotation %s: %q is not a duration (90s, 15m, or seconds)", AnnotationGracePeriod, v)
	}
	return d, nil
}

// busyOf reads reaper.busy_url and reaper.busy_max: "" and 0 when absent; an
// error when unusable (the URL is not quoted: it may hold a token), and then
// no busy_url at all, so that a bad busy_max does not pass for the default.
func busyOf(ann map[string]string) (string, time.Duration, error) {
	u := strings.TrimSpace(ann[AnnotationBusyURL])
	if u == "" {
		return "", 0, nil
	}
	if p := paas.CheckBusyURL(u); p != "" {
		return "", 0, fmt.Errorf("annotation %s: %s", AnnotationBusyURL, p)
	}
	v, ok := ann[AnnotationBusyMax]
	if !ok || v == "" {
		return u, 0, nil
	}
	d, err := conf.ParseDuration(v)
	if err != nil {
		return "", 0, fmt.Errorf("annotation %s: %w", AnnotationBusyMax, err)
	}
	if p := paas.CheckBusyMax(d); p != "" {
		return "", 0, fmt.Errorf("annotation %s: %s", AnnotationBusyMax, p)
	}
	return u, d, nil
}
