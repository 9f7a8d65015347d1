package fakeclever

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultKind names a misbehaviour of the API.
type FaultKind string

// The faults the fake can inject.
const (
	// Fault5xx answers Fault.Status (503 by default) with an error body.
	Fault5xx FaultKind = "5xx"
	// FaultRateLimit403 answers the v2 rate limit: 403 with body id 403 (a v4 path
	// answers 429, as v4 does).
	FaultRateLimit403 FaultKind = "rate_limit_403"
	// FaultTooMany429 answers 429 with a v4 error body.
	FaultTooMany429 FaultKind = "too_many_429"
	// FaultSlow waits Fault.Delay (5 s by default) before answering normally; if
	// the client gives up first, the call has no effect.
	FaultSlow FaultKind = "slow"
	// FaultNeverDeployed4014 answers a start (POST …/instances) with the 4014 error;
	// other calls are not affected.
	FaultNeverDeployed4014 FaultKind = "never_deployed_4014"
	// FaultLocked answers a start or a stop with the "locked" error (409, see the
	// package doc); other calls are not affected.
	FaultLocked FaultKind = "locked"
)

// Fault is a misbehaviour injected with Inject.
type Fault struct {
	Kind FaultKind
	// Count is how many calls it answers; 0 means until ClearFaults.
	Count int
	// Delay is the wait of FaultSlow.
	Delay time.Duration
	// RetryAfter, for the rate limits, is sent as a Retry-After header in whole
	// seconds (rounded up); 0 sends none, as the real API does.
	RetryAfter time.Duration
	// Status is the status of Fault5xx (500-599).
	Status int
}

type activeFault struct {
	app  string
	left int // calls left; meaningless when Count is 0
	Fault
}

// Inject adds a fault for the app's calls (those whose path names it), or for every
// API call when appID is "". Faults apply in the order they were injected, one per
// call; authentication is checked first. It panics on an unknown kind.
func (f *Fake) Inject(appID string, fault Fault) {
	switch fault.Kind {
	case Fault5xx:
		if fault.Status == 0 {
			fault.Status = http.StatusServiceUnavailable
		}
		if fault.Status < 500 || fault.Status > 599 {
			panic(fmt.Sprintf("fakeclever: Inject: status %d is not a 5xx", fault.Status))
		}
	case FaultSlow:
		if fault.Delay <= 0 {
			fault.Delay = 5 * time.Second
		}
	case FaultRateLimit403, FaultTooMany429, FaultNeverDeployed4014, FaultLocked:
	default:
		panic("fakeclever: Inject: unknown fault kind " + string(fault.Kind))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, &activeFault{app: appID, left: fault.Count, Fault: fault})
}

// ClearFaults removes every fault injected so far.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// takeFault returns the fault that answers this call, if any, and counts it.
func (f *Fake) takeFault(appID string, r *http.Request) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	isInstances := strings.HasSuffix(r.URL.Path, "/instances")
	for i, af := range f.faults {
		if af.app != "" && af.app != appID {
			continue
		}
		switch af.Kind {
		case FaultNeverDeployed4014:
			if !isInstances || r.Method != http.MethodPost {
				continue
			}
		case FaultLocked:
			if !isInstances || (r.Method != http.MethodPost && r.Method != http.MethodDelete) {
				continue
			}
		}
		fault := af.Fault
		if af.Count > 0 {
			af.left--
			if af.left <= 0 {
				f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
			}
		}
		return &fault
	}
	return nil
}

// answerFault writes the fault's answer. It returns false when the call must go on
// to the normal handler (a slow answer whose wait is over).
func answerFault(w http.ResponseWriter, r *http.Request, fault *Fault, v4 bool) bool {
	retryAfter := func() {
		if fault.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(fault.RetryAfter.Seconds()))))
		}
	}
	switch fault.Kind {
	case FaultSlow:
		if !sleepCtx(r.Context(), fault.Delay) {
			return true // the client went away: nothing happens
		}
		return false
	case Fault5xx:
		if v4 {
			writeV4Error(w, fault.Status, "clever.internal-error", "Internal error (injected)")
		} else {
			writeV2Error(w, fault.Status, 500, "Internal server error (injected)")
		}
	case FaultRateLimit403:
		retryAfter()
		if v4 {
			writeV4Error(w, http.StatusTooManyRequests, "clever.rate-limit", "Too many requests")
		} else {
			writeV2Error(w, http.StatusForbidden, 403, "RATE_LIMIT_HIT: too many requests, slow down")
		}
	case FaultTooMany429:
		retryAfter()
		writeV4Error(w, http.StatusTooManyRequests, "clever.rate-limit", "Too many requests")
	case FaultNeverDeployed4014:
		writeNeverDeployed(w)
	case FaultLocked:
		writeLocked(w)
	}
	return true
}
