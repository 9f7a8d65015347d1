// Package paas declares what reaper needs from a platform that runs apps: observe an
// app, start it, stop it. Drivers live in sub-packages (paas/process for local
// processes, paas/clevercloud for Clever Cloud, paas/docker for containers,
// paas/kubernetes for Deployments and StatefulSets);
// paas/paastest holds a recording fake for tests, and the contract every driver
// passes (paastest.Run).
//
// The vocabulary is Clever Cloud's, because the decision rules of reaper were written
// for it: an app's State is what the platform wants (SHOULD_BE_UP, SHOULD_BE_DOWN,
// WANTS_TO_BE_UP) and its last Deployment says whether a start is in progress, done or
// failed. Other drivers map their own world onto it (see paas/process).
package paas

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// App names one app on a platform.
type App struct {
	// ID is the platform's id of the app (app_<uuid> on Clever Cloud, paas.apps[].id
	// for the process driver).
	ID string
	// Owner is the organisation or user that owns the app on platforms that have
	// owners (orga_… or user_… on Clever Cloud); empty elsewhere.
	Owner string
}

func (a App) String() string {
	if a.Owner == "" {
		return a.ID
	}
	return a.Owner + "/" + a.ID
}

// State is what the platform wants for an app.
type State string

// The states every driver reports. A platform may report others (Clever Cloud's
// MODERATED, DEFAULT_OF_PAYMENT): reaper treats any other value as an error
// "unexpected state".
const (
	StateShouldBeUp   State = "SHOULD_BE_UP"   // running, or meant to be
	StateShouldBeDown State = "SHOULD_BE_DOWN" // stopped
	StateWantsToBeUp  State = "WANTS_TO_BE_UP" // starting (or its start failed: see the deployment)
)

// DeploymentState is the state of a deployment.
type DeploymentState string

// Deployment states, as Clever Cloud names them.
const (
	DeploymentWIP         DeploymentState = "WIP"
	DeploymentTaskRunning DeploymentState = "TASK_RUNNING"
	DeploymentOK          DeploymentState = "OK"
	DeploymentFail        DeploymentState = "FAIL"
	DeploymentCancelled   DeploymentState = "CANCELLED"
)

// InProgress reports whether a deployment in this state has not finished.
func (s DeploymentState) InProgress() bool {
	return s == DeploymentWIP || s == DeploymentTaskRunning
}

// Deployment is the last deployment (a start, a stop, a redeploy) of an app.
type Deployment struct {
	State  DeploymentState
	Action string    // DEPLOY, UNDEPLOY, UPSCALE, … (free text for other drivers)
	At     time.Time // when it began
	Cause  string    // why it failed, when the platform says
	// Exited is set on a FAIL deployment whose app ran and exited by itself
	// before it was ready (Cause says how: its exit status, the end of its
	// log). Such a failure may well pass (a port still held by the app's last
	// run, a database not up yet): reaper starts the app again, with a
	// back-off, where it takes any other failed start as final.
	Exited bool
	// Before is the deployment before this one, when the driver read it (nil
	// otherwise): the platform's own order tells a stop that came after a start
	// from the stop that came before it, whatever the clocks say.
	Before *Deployment
}

// Observation is what a driver sees of one app at one moment.
type Observation struct {
	// State is what the platform wants for the app.
	State State
	// Deployment is the app's last deployment, or nil when it has none or when the
	// driver did not read it (see DeploymentReader).
	Deployment *Deployment
	// NotShutdownable is set when the platform says the app must never be stopped
	// (Clever Cloud's deployment.shutdownable: false).
	NotShutdownable bool
	// Name is the app's display name, when the platform has one.
	Name string
	// Exit is the app's last exit that no stop asked for (a crash, a kill by
	// hand), once it had been ready; nil when the driver cannot tell, or the
	// app never ended that way. reaper counts an exit soon after a wake as a
	// failed boot (a crash loop).
	Exit *Exit
}

// Exit is how and when an app ended by itself.
type Exit struct {
	At time.Time
	// Status says how: "exited with status 3", "killed by signal 9 (SIGKILL)",
	// perhaps with the end of the app's log.
	Status string
}

// ReadinessWaiter is implemented by drivers that probe the readiness of the
// apps they start until it passes (the process and docker drivers). reaper
// says whether it still waits for an app: it does not for an app in Error,
// which nothing but an operator's reset brings back (and the reset looks at
// it again), so probing it would be load for nothing (a probe every 25 ms,
// for as long as it stays in Error).
type ReadinessWaiter interface {
	// WaitReady pauses (false) or resumes (true) the readiness probes of a
	// start of the app in progress; probes resume on the schedule of a fresh
	// start. It never blocks, may be repeated, and does nothing for an app
	// that is not starting; an app started later is probed as usual.
	WaitReady(app App, wait bool)
}

// Client drives one platform. Every method is bounded by its context, safe for
// concurrent use, and idempotent where the platform allows it: Start on an app that
// is starting and Stop on an app that is down do nothing harmful. Start on an app
// that is up may restart it on some platforms (Clever Cloud): callers must not send
// it. Errors wrap the sentinels below so callers can classify them with errors.Is.
type Client interface {
	// Observe reads the app's state. It may leave Observation.Deployment nil.
	Observe(ctx context.Context, app App) (Observation, error)
	// Start asks the platform to start the app. It returns once the platform has
	// accepted the ask, not when the app is up.
	Start(ctx context.Context, app App) error
	// Stop asks the platform to stop the app.
	Stop(ctx context.Context, app App) error
}

// BatchObserver is implemented by drivers that observe many apps in one call
// (Clever Cloud's /v2/summary). Apps absent from the result were not found.
type BatchObserver interface {
	ObserveAll(ctx context.Context, apps []App) (map[App]Observation, error)
}

// DeploymentReader is implemented by drivers whose Observe does not read the last
// deployment, because reading it costs a call per app. Callers read it only when a
// decision needs it. It returns nil, nil for an app that was never deployed.
type DeploymentReader interface {
	LastDeployment(ctx context.Context, app App) (*Deployment, error)
}

// Watcher is implemented by drivers that learn of changes by themselves (a process
// that became ready or exited). Watch calls changed with the app's id each time the
// app's observation may have changed, until ctx ends; changed must not block.
type Watcher interface {
	Watch(ctx context.Context, changed func(appID string))
}

// Errors returned by drivers, wrapped with context. Test with errors.Is.
var (
	// ErrNotFound: the app does not exist or the credential cannot see it.
	ErrNotFound = errors.New("paas: app not found")
	// ErrAuth: the platform refused the credential. The message names the kind of
	// credential, never its value.
	ErrAuth = errors.New("paas: authentication refused")
	// ErrBusy: the app is locked by another operation; ask again later.
	ErrBusy = errors.New("paas: app busy with another operation")
	// ErrNeverDeployed: the app has never been deployed, so it cannot be started.
	ErrNeverDeployed = errors.New("paas: app was never deployed")
	// ErrRateLimited: the platform asks us to slow down. See RateLimitError.
	ErrRateLimited = errors.New("paas: rate limited")
	// ErrUnavailable: the platform failed or did not answer in time; retryable.
	ErrUnavailable = errors.New("paas: platform unavailable")
	// ErrNotShutdownable: the platform says the app must never be stopped; the stop
	// was refused before anything was sent.
	ErrNotShutdownable = errors.New("paas: app must not be stopped")
	// ErrStartFailed: the app could not be started (its command failed, its image is
	// missing, …). Not retryable without a change.
	ErrStartFailed = errors.New("paas: app could not be started")
)

// CauseError carries, beside the error of a call, the driver's own sentence for
// what happened to the app, in the platform's words and without the call that
// found it ("Deployment shop/web was deleted at …"). When the error puts the
// app in Error, reaper shows Cause as the reason instead of its generic one for
// the error's kind. Err is what errors.Is sees (paas.ErrNotFound, …).
type CauseError struct {
	Cause string
	Err   error
}

func (e *CauseError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *CauseError) Unwrap() error { return e.Err }

// CauseOf returns the Cause of the first CauseError in err's chain; "" when
// there is none.
func CauseOf(err error) string {
	var c *CauseError
	if errors.As(err, &c) {
		return c.Cause
	}
	return ""
}

// RateLimitError is a rate-limit answer; RetryAfter is zero when the platform did not
// say how long to wait.
type RateLimitError struct {
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("paas: rate limited (retry after %s)", e.RetryAfter)
	}
	return "paas: rate limited"
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Retryable reports whether err is worth trying again later without a change:
// rate limits, busy apps, and platform failures.
func Retryable(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrBusy) || errors.Is(err, ErrUnavailable)
}

// PolicyHinter is implemented by drivers whose apps say for themselves how they
// want to be treated (the docker driver's reaper.grace_period label, written by
// the container's owner). reaper applies a hint over the policy of the routes
// that manage the app.
type PolicyHinter interface {
	// AppPolicy returns the app's own hint, from memory: it never waits on the
	// platform, so it may be called on every pass and every view. A zero field
	// was not set. A non-nil error says which value is set but cannot be used
	// (it names the label and what is wrong); the fields that could be read are
	// still returned.
	AppPolicy(app App) (PolicyHint, error)
}

// PolicyHint is what an app says of its own policy.
type PolicyHint struct {
	// GracePeriod is the idle time before the app is put to sleep; 0: not set.
	GracePeriod time.Duration
	// From says where the hint comes from, for operators: "label
	// reaper.grace_period of container web-1".
	From string
	// Traefik: the app asks that the routes managing it be given to Traefik
	// by reaper's HTTP provider (GET /traefik on node.auth_listen; the docker
	// driver's reaper.traefik label), as node.auth_traefik_routes does.
	Traefik bool
	// DependsOn are the apps this one needs (the docker driver's
	// reaper.depends_on label): reaper starts them first, keeps them up
	// while this one is, and puts them to sleep after it, as it does with the
	// depends_on of the configuration file. nil: none.
	DependsOn []string
	// BusyURL is asked before the app is put to sleep, as a route's
	// reaper.busy_url is (200: busy, 204 or 404: idle), for an app no route
	// of which sets one: a route-less worker of a group. "": not set.
	BusyURL string
	// BusyFrom says where BusyURL comes from, for operators: "label
	// reaper.busy_url of container worker-1", "config paas.apps[].busy_url".
	// "": the driver does not say.
	BusyFrom string
	// BusyMax is how long a failing BusyURL keeps the app up; 0: the
	// default (an hour).
	BusyMax time.Duration
}

// Meter is implemented by drivers that measure the apps they run, for operators
// (the admin API and the dashboard show it).
type Meter interface {
	// Measured returns what the driver last measured of the app, from memory: it
	// never waits on the platform. Unknown fields are zero. The memory is
	// measured again when the driver's Cost is called (paas.Pricer).
	Measured(app App) Measures
}

// Measures are what a driver measured of an app.
type Measures struct {
	// BootTime is how long the driver's last start of the app took, from the
	// start call to its readiness; 0 if it has not started it (an app found
	// running is not timed).
	BootTime time.Duration
	// MemoryBytes is the memory the app held awake when last measured, at
	// MemoryAt (it may have slept since).
	MemoryBytes int64
	MemoryAt    time.Time
}

// Pricer is implemented by drivers that know what an app costs while it runs,
// for the savings reaper reports.
type Pricer interface {
	// Cost returns what the app costs while awake; fields the driver cannot tell
	// are zero. It may read the platform (cached by the driver).
	Cost(ctx context.Context, app App) (Cost, error)
}

// Cost is what an app costs while it runs.
type Cost struct {
	// PerHour is the price of an hour awake, in Currency; 0 when unknown.
	PerHour  float64
	Currency string
	// MemoryBytes is the memory the app holds while awake (for the process
	// driver, the resident memory of its process group when last measured);
	// 0 when unknown.
	MemoryBytes int64
}

// Owner is implemented by drivers that tell which apps are theirs, so that
// several drivers can serve one node side by side (paas/multi): the process
// driver owns the apps of paas.apps, the docker driver its declared and
// discovered apps, the Clever Cloud driver the ids of the form app_<uuid>.
type Owner interface {
	// Owns reports whether the app id is one of the driver's apps. It answers
	// from memory, without waiting on the platform.
	Owns(appID string) bool
}

// ValidName reports whether s may be an id or name a driver declares (an app, an
// engine): 1 to 200 letters, digits, '.', '-' or '_', not starting with '.'
// (drivers name files and markers after it).
func ValidName(s string) bool {
	if s == "" || s[0] == '.' || len(s) > 200 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// MaxBusyMax bounds busy_max: a worker that fails to say it is idle for longer
// is broken, not busy.
const MaxBusyMax = 7 * 24 * time.Hour

// CheckBusyURL says what is wrong with a busy_url (a route's, or an app's on
// its driver), "" when nothing: it must be an http(s) URL without user info.
// The URL is never quoted back: it may carry a token.
func CheckBusyURL(busyURL string) string {
	u, err := url.Parse(busyURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "is not an http(s) URL (http://127.0.0.1:3001/busy)"
	case u.User != nil:
		return "must not hold a user or password: put a token in the query or path"
	}
	return ""
}

// CheckBusyMax says what is wrong with a busy_max, "" when nothing: from 1s
// to MaxBusyMax.
func CheckBusyMax(d time.Duration) string {
	if d < time.Second || d > MaxBusyMax {
		return fmt.Sprintf("%s is not from 1s to %s", d, MaxBusyMax)
	}
	return ""
}
