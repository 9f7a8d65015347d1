package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

var (
	_ paas.Client          = (*Driver)(nil)
	_ paas.Watcher         = (*Driver)(nil)
	_ paas.Owner           = (*Driver)(nil)
	_ paas.PolicyHinter    = (*Driver)(nil)
	_ paas.Meter           = (*Driver)(nil)
	_ paas.ReadinessWaiter = (*Driver)(nil)
)

// firstSyncWait bounds how long New waits for the first listing of the
// workloads.
const firstSyncWait = 10 * time.Second

// maxDiscovered bounds the apps discovered from annotations (a namespace full
// of annotated workloads must not grow reaper without end).
const maxDiscovered = 10000

// Driver drives the workloads of one cluster. It is safe for concurrent use.
// Its goroutines: one per informer, and per app at most one scale-back of a
// failed wake and one ready probe loop.
type Driver struct {
	log        *slog.Logger
	kc         *client
	prober     *probe.Prober
	informers  []*informer
	namespaces []string
	discover   bool

	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex // guards what follows; never held while an app's lock is taken
	closed     bool
	known      paas.KnownApps[*app]
	byRef      map[ref]*app
	warned     map[string]bool // conflicts and bad annotations already logged
	watchers   paas.Watchers
	hpaSkipped bool // listing HPAs was refused: the check is off
}

// New returns a driver for opts.Config. It connects to the apiserver, lists
// the workloads of the watched namespaces and adopts those that run, waiting
// at most firstSyncWait; an apiserver that does not answer by then does not
// make New fail: Observe says it is unavailable until it answers. New fails on
// an invalid configuration or a kubeconfig it cannot use.
func New(opts Options) (*Driver, error) {
	var errs conf.Errors
	cfg := opts.Config
	cfg.Validate("paas.kubernetes", &errs)
	if err := errs.Err(); err != nil {
		return nil, fmt.Errorf("kubernetes: invalid configuration:\n%w", err)
	}
	rc, err := restConfig(opts)
	if err != nil {
		return nil, err
	}
	d := &Driver{
		log: opts.Logger, namespaces: cfg.Namespaces, discover: cfg.AnnotationsOn(),
		byRef: map[ref]*app{}, warned: map[string]bool{},
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.prober = probe.New(d.log)
	if d.kc, err = newClient(rc); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	for _, ac := range cfg.Apps {
		ac = ac.resolved(cfg.Namespaces)
		a := &app{id: ac.ID, ref: ref{ac.Kind, ac.Namespace, ac.Name}, declared: &ac}
		d.known.Declare(ac.ID, a)
		d.byRef[a.ref] = a
	}
	d.base, d.cancel = context.WithCancel(context.Background())
	d.newInformers(cfg.Namespaces)
	d.runInformers(firstSyncWait)
	d.checkHPAs(d.base, d.apps_())
	return d, nil
}

// restConfig is the client configuration: Options.REST, the kubeconfig of the
// file, in-cluster, else $KUBECONFIG (or ~/.kube/config).
func restConfig(opts Options) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	lookup := opts.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	switch {
	case opts.REST != nil:
		rc = rest.CopyConfig(opts.REST)
	case opts.Config.Kubeconfig != "":
		rc, err = fromKubeconfig(opts.Config.Kubeconfig, opts.Config.Context)
	default:
		rc, err = rest.InClusterConfig()
		if err != nil {
			path, _ := lookup("KUBECONFIG")
			rc, err = fromKubeconfig(path, opts.Config.Context)
			if err != nil {
				err = fmt.Errorf("not in a cluster, and %w", err)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	rc.UserAgent = opts.UserAgent
	if rc.UserAgent == "" {
		rc.UserAgent = "reaper"
	}
	// Watches carry the load; the few calls of a wake must not wait behind
	// client-go's default limit of 5 per second.
	rc.QPS, rc.Burst = 50, 100
	return rc, nil
}

// fromKubeconfig loads a kubeconfig file (paths separated as in $KUBECONFIG;
// empty: ~/.kube/config) with its context (empty: the current one).
func fromKubeconfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return rc, nil
}

// Observe returns what the driver knows of the app, from memory (kept fresh by
// the informers): it never waits on the network. An app neither declared nor
// discovered, or whose workload is gone, gives paas.ErrNotFound (saying when
// it was deleted); an app whose workloads are not listed yet gives
// paas.ErrUnavailable, or paas.ErrAuth when the listing is refused.
func (d *Driver) Observe(_ context.Context, pa paas.App) (paas.Observation, error) {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return paas.Observation{}, err
	}
	if err := d.notListed(a.ref); err != nil {
		return paas.Observation{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v == nil {
		return paas.Observation{}, a.missing()
	}
	return a.observation(), nil
}

// missing says why the app's workload is not there, with the workload named
// as the cause of the app's Error (paas.CauseError); a.mu must be held.
func (a *app) missing() error {
	cause := fmt.Sprintf("%s not found (it does not exist, or is not visible to reaper's credential)", a.ref)
	if !a.deletedAt.IsZero() {
		cause = fmt.Sprintf("%s was deleted at %s", a.ref, a.deletedAt.UTC().Format(time.RFC3339))
	}
	return &paas.CauseError{Cause: cause, Err: fmt.Errorf("kubernetes: app %s: %s: %w", a.id, cause, paas.ErrNotFound)}
}

// Watch registers changed, called with an app's id each time its observation
// may have changed (scaled, ready, deleted, discovered), until ctx ends or
// the driver is closed. It returns at once; changed is called outside the
// driver's locks and must not block.
func (d *Driver) Watch(ctx context.Context, changed func(appID string)) {
	d.watchers.Add(ctx, changed)
}

// Close ends the informers and the probes, and waits for the driver's
// goroutines. It scales nothing: the workloads stay as they are, and the next
// driver adopts them. Close is idempotent and returns nil.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.watchers.Close()
	d.cancel()
	d.wg.Wait()
	d.prober.Close()
	return nil
}

// lookup finds a declared or discovered app.
func (d *Driver) lookup(id string) (*app, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if a, ok := d.known.Lookup(id); ok {
		return a, nil
	}
	return nil, fmt.Errorf("kubernetes: app %q is not in paas.kubernetes.apps, and no Deployment or StatefulSet annotated %s: \"true\" claims it (%s: %s, or that name): %w",
		id, AnnotationEnable, AnnotationAppID, id, paas.ErrNotFound)
}

// apps_ returns every app, declared then discovered.
func (d *Driver) apps_() []*app {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.known.All()
}

// Owns reports whether the app is declared in paas.kubernetes.apps or
// discovered from a workload's annotations (paas.Owner).
func (d *Driver) Owns(appID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.known.Owns(appID)
}

// AppPolicy returns the grace period of the workload's reaper.grace_period
// annotation and its busy_url: paas.kubernetes.apps[].busy_url, else the
// reaper.busy_url annotation (paas.PolicyHinter), from memory. What cannot be
// read is left out and said in the error.
func (d *Driver) AppPolicy(pa paas.App) (paas.PolicyHint, error) {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return paas.PolicyHint{}, nil
	}
	var h paas.PolicyHint
	if a.declared != nil && a.declared.BusyURL != "" {
		h.BusyURL, h.BusyMax = a.declared.BusyURL, a.declared.BusyMax.D()
		h.BusyFrom = "config paas.kubernetes.apps[].busy_url"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v == nil {
		return h, nil
	}
	var problems []string
	g, err := gracePeriodOf(a.v.annotations)
	if err != nil {
		problems = append(problems, err.Error())
	} else if g > 0 {
		h.GracePeriod, h.From = g, "annotation "+AnnotationGracePeriod+" of "+a.ref.String()
	}
	if h.BusyURL == "" {
		if h.BusyURL, h.BusyMax, err = busyOf(a.v.annotations); err != nil {
			problems = append(problems, err.Error())
		} else if h.BusyURL != "" {
			h.BusyFrom = "annotation " + AnnotationBusyURL + " of " + a.ref.String()
		}
	}
	if len(problems) > 0 {
		return h, fmt.Errorf("%s: %s", a.ref, strings.Join(problems, "; "))
	}
	return h, nil
}

// Measured returns the time the last wake of ours took, from the scale call to
// the first ready replica (paas.Meter).
func (d *Driver) Measured(pa paas.App) paas.Measures {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return paas.Measures{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return paas.Measures{BootTime: a.bootTime}
}

// notify tells every watcher that these apps' observations may have changed;
// no lock may be held.
func (d *Driver) notify(ids ...string) { d.watchers.Notify(ids...) }

// warnOnce logs a problem once per key.
func (d *Driver) warnOnce(key, msg string, args ...any) {
	d.mu.Lock()
	seen := d.warned[key]
	if !seen && len(d.warned) < maxDiscovered {
		d.warned[key] = true
	}
	d.mu.Unlock()
	if !seen {
		d.log.Warn(msg, args...)
	}
}
