package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/reapergw/reaper/paas"
)

// engine is what the driver asks of one Docker engine, and all it asks: it lists,
// inspects and watches containers, reads their memory, starts, stops, kills,
// pauses and unpauses them. It never creates, removes, execs into or pulls
// anything (docs/docker.md has a socket proxy that allows exactly these calls).
type engine interface {
	List(ctx context.Context) ([]view, error)
	Inspect(ctx context.Context, ref string) (view, error)
	Events(ctx context.Context) (<-chan events.Message, <-chan error)
	Start(ctx context.Context, id string) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Kill(ctx context.Context, id string) error
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
	Memory(ctx context.Context, id string) (int64, error)
	Close() error
}

// callTimeout bounds one call that reads (list, inspect, stats) or that the engine
// answers at once (start, pause, kill): a hung engine must not hold the job.
const callTimeout = 15 * time.Second

// view is what an engine says of one container at one moment.
type view struct {
	id, name  string // the name without its leading '/'
	labels    map[string]string
	status    container.ContainerState // running, paused, exited, created, restarting, …
	health    container.HealthStatus   // "" without a HEALTHCHECK
	restart   container.RestartPolicyMode
	exitCode  int
	oomKilled bool
	startedAt time.Time
	errText   string // the engine's own error for the last start, if any
	net       netView
}

func (v *view) running() bool { return v.status == container.StateRunning }

// serving reports whether the container runs and, when it has a healthcheck, is
// healthy: the readiness of an app without a ready probe.
func (v *view) serving() bool {
	return v.running() && (v.health == "" || v.health == container.NoHealthcheck || v.health == container.Healthy)
}

// errGone: the container does not exist (any more) on the engine.
var errGone = errors.New("docker: no such container")

// mobyEngine is an engine reached through the official Go client of the Engine API.
type mobyEngine struct {
	name string
	cli  *client.Client
}

// dial returns a client of one engine. It connects to nothing yet: the first call
// does, and negotiates the API version (1.40 or later, Docker 19.03+).
func dial(h HostConfig, userAgent string) (*mobyEngine, error) {
	opts := []client.Opt{client.WithHost(h.Host), client.WithUserAgent(userAgent)}
	if h.TLS != nil {
		opts = append(opts, client.WithTLSClientConfig(h.TLS.CA, h.TLS.Cert, h.TLS.Key))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: engine %s: %w", h.Name, err)
	}
	return &mobyEngine{name: h.Name, cli: cli}, nil
}

func (e *mobyEngine) List(ctx context.Context) ([]view, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return nil, err
	}
	out := make([]view, 0, len(res.Items))
	for _, s := range res.Items {
		v := view{id: s.ID, labels: s.Labels, status: s.State}
		if len(s.Names) > 0 {
			v.name = strings.TrimPrefix(s.Names[0], "/")
		}
		if s.Health != nil {
			v.health = s.Health.Status
		}
		out = append(out, v)
	}
	return out, nil
}

func (e *mobyEngine) Inspect(ctx context.Context, ref string) (view, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := e.cli.ContainerInspect(ctx, ref, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return view{}, fmt.Errorf("%w %q", errGone, ref)
		}
		return view{}, err
	}
	c := res.Container
	v := view{id: c.ID, name: strings.TrimPrefix(c.Name, "/")}
	if c.Config != nil {
		v.labels = c.Config.Labels
	}
	if c.HostConfig != nil {
		v.restart = c.HostConfig.RestartPolicy.Name
	}
	v.net = readNet(c)
	if s := c.State; s != nil {
		v.status, v.exitCode, v.oomKilled, v.errText = s.Status, s.ExitCode, s.OOMKilled, s.Error
		v.startedAt, _ = time.Parse(time.RFC3339Nano, s.StartedAt)
		if s.Health != nil {
			v.health = s.Health.Status
		}
	}
	return v, nil
}

func (e *mobyEngine) Events(ctx context.Context) (<-chan events.Message, <-chan error) {
	res := e.cli.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).Add("type", string(events.ContainerEventType))})
	return res.Messages, res.Err
}

func (e *mobyEngine) Start(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := e.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

// Stop blocks until the container has exited: the engine sends SIGTERM (or the
// image's STOPSIGNAL), then SIGKILL after timeout.
func (e *mobyEngine) Stop(ctx context.Context, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout+callTimeout)
	defer cancel()
	secs := int((timeout + time.Second - 1) / time.Second)
	_, err := e.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &secs})
	return err
}

func (e *mobyEngine) Kill(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := e.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	return err
}

func (e *mobyEngine) Pause(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := e.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	return err
}

func (e *mobyEngine) Unpause(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := e.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	return err
}

// Memory reads the container's memory in use, as `docker stats` shows it: the
// cgroup's usage less its inactive page cache.
func (e *mobyEngine) Memory(ctx context.Context, id string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := e.cli.ContainerStats(ctx, id, client.ContainerStatsOptions{})
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return 0, err
	}
	m := st.MemoryStats
	used := m.Usage
	for _, k := range []string{"total_inactive_file", "inactive_file"} { // cgroup v1, v2
		if v, ok := m.Stats[k]; ok && v < used {
			used -= v
			break
		}
	}
	return int64(used), nil
}

func (e *mobyEngine) Close() error { return e.cli.Close() }

// classify wraps an engine's error with the paas sentinel that says what it means
// for reaper: the engine unreachable or failing (retryable), a refusal of the
// engine or of a socket proxy in front of it (a permission reaper lacks), a
// conflict (busy). what says which call failed.
func classify(host, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errGone):
		return err
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("docker: engine %s: %s: %w (%w)", host, what, paas.ErrUnavailable, err)
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("docker: engine %s unreachable: %s: %w (%v)", host, what, paas.ErrUnavailable, err)
	case cerrdefs.IsPermissionDenied(err), cerrdefs.IsUnauthorized(err):
		return fmt.Errorf("docker: engine %s (or its socket proxy) refused %s: %w (%v)", host, what, paas.ErrAuth, err)
	case cerrdefs.IsConflict(err):
		return fmt.Errorf("docker: engine %s: %s: %w (%v)", host, what, paas.ErrBusy, err)
	case cerrdefs.IsInvalidArgument(err), cerrdefs.IsFailedPrecondition(err), cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker: engine %s: %s: %v", host, what, err)
	}
	return fmt.Errorf("docker: engine %s: %s: %w (%v)", host, what, paas.ErrUnavailable, err)
}
