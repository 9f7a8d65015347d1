package docker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// The labels a container carries to be managed by reaper. Only reaper.enable=true
// opts a container in; the others say how to drive it, with the keys and values of
// paas.docker.apps[] (the route that wakes it stays in the configuration file).
const (
	LabelEnable        = "reaper.enable"         // "true": reaper may start and stop it
	LabelAppID         = "reaper.app_id"         // the app's id in routes; default: the container's name
	LabelStopMethod    = "reaper.stop_method"    // stop | pause | kill
	LabelStopTimeout   = "reaper.stop_timeout"   // 10s
	LabelReadyTCP      = "reaper.ready.tcp"      // host:port
	LabelReadyHTTP     = "reaper.ready.http"     // http://host:port/health
	LabelReadyPostgres = "reaper.ready.postgres" // host:port (pg_isready's question)
	LabelReadyRedis    = "reaper.ready.redis"    // host:port (PING; no password in a label: configure the app in the file)
	LabelReadyInterval = "reaper.ready.interval" // 25ms
	LabelDependsOn     = "reaper.depends_on"     // app ids, comma-separated
	LabelPricePerHour  = "reaper.price_per_hour" // 0.05
	LabelCurrency      = "reaper.currency"       // EUR
	// LabelBusyURL is asked before the app is put to sleep (200: busy),
	// when no route of it sets a busy_url; LabelBusyMax bounds how long a
	// failing one keeps it up (1h). reaper's, like LabelGracePeriod
	// (Driver.AppPolicy).
	LabelBusyURL = "reaper.busy_url"
	LabelBusyMax = "reaper.busy_max"
	// LabelGracePeriod is the app's idle time before sleep (15m): unlike the
	// others it is not the driver's but reaper's, and wins over the grace period
	// of the routes that manage the app (Driver.AppPolicy). A value that cannot
	// be read is logged and shown; the routes' grace period applies then.
	LabelGracePeriod = "reaper.grace_period"
	// LabelTraefik "true" asks that the routes managing the app be given to
	// Traefik by reaper's HTTP provider (GET /traefik on node.auth_listen), as
	// node.auth_traefik_routes does: reaper's, like LabelGracePeriod
	// (Driver.AppPolicy). A value that cannot be read is logged and shown, and
	// counts as false.
	LabelTraefik = "reaper.traefik"
)

// optedIn reports whether a container's labels let reaper manage it.
func optedIn(labels map[string]string) bool {
	v, err := strconv.ParseBool(strings.TrimSpace(labels[LabelEnable]))
	return err == nil && v
}

// labelAppID is the app id a container that opted in claims.
func labelAppID(name string, labels map[string]string) string {
	if id := strings.TrimSpace(labels[LabelAppID]); id != "" {
		return id
	}
	return name
}

// fromLabels reads an app's configuration from its container's labels. Problems
// are returned as one message naming each label; an app with problems is seen,
// but never started or stopped.
func fromLabels(name string, labels map[string]string) (AppConfig, string) {
	var errs conf.Errors
	c := AppConfig{ID: labelAppID(name, labels), Container: name}
	if !paas.ValidName(c.ID) {
		errs.Add(LabelAppID, "%s must be letters, digits, '.', '-' or '_'", strconv.Quote(c.ID))
	}
	c.StopMethod = strings.TrimSpace(labels[LabelStopMethod])
	if v, ok := labels[LabelStopTimeout]; ok {
		if d, err := conf.ParseDuration(v); err != nil {
			errs.Add(LabelStopTimeout, "%s", err.Error())
		} else {
			c.StopTimeout = conf.Duration(d)
		}
	}
	r := probe.Config{
		TCP: strings.TrimSpace(labels[LabelReadyTCP]), HTTP: strings.TrimSpace(labels[LabelReadyHTTP]),
		Postgres: strings.TrimSpace(labels[LabelReadyPostgres]), Redis: strings.TrimSpace(labels[LabelReadyRedis]),
	}
	if r.TCP != "" || r.HTTP != "" || r.Postgres != "" || r.Redis != "" {
		c.Ready = &r
		if v, ok := labels[LabelReadyInterval]; ok {
			if d, err := conf.ParseDuration(v); err != nil {
				errs.Add(LabelReadyInterval, "%s", err.Error())
			} else {
				c.Ready.Interval = conf.Duration(d)
			}
		}
	}
	for _, d := range strings.Split(labels[LabelDependsOn], ",") {
		if d = strings.TrimSpace(d); d != "" {
			c.DependsOn = append(c.DependsOn, d)
		}
	}
	if v, ok := labels[LabelPricePerHour]; ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			errs.Add(LabelPricePerHour, "%s is not a price", strconv.Quote(v))
		} else {
			c.PricePerHour = f
		}
	}
	c.Currency = strings.TrimSpace(labels[LabelCurrency])
	c.BusyURL = strings.TrimSpace(labels[LabelBusyURL])
	if v, ok := labels[LabelBusyMax]; ok {
		if d, err := conf.ParseDuration(v); err != nil {
			errs.Add(LabelBusyMax, "%s", err.Error())
		} else {
			c.BusyMax = conf.Duration(d)
		}
	}
	c.check("reaper", &errs) // paths such as reaper.stop_method: the labels' names
	if err := errs.Err(); err != nil {
		return c, strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return c, ""
}

// graceLabel reads the grace period a container's labels set: 0 and nil when
// they set none, 0 and why when its value cannot be used.
func graceLabel(labels map[string]string) (time.Duration, error) {
	v, ok := labels[LabelGracePeriod]
	if !ok {
		return 0, nil
	}
	d, err := conf.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("label %s: %w", LabelGracePeriod, err)
	case d <= 0:
		return 0, fmt.Errorf("label %s: %s must be more than 0", LabelGracePeriod, strconv.Quote(v))
	}
	return d, nil
}

// traefikLabel reads whether a container's labels ask for Traefik: false and
// nil when they do not say, false and why when their value cannot be read.
func traefikLabel(labels map[string]string) (bool, error) {
	v, ok := labels[LabelTraefik]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("label %s: %s is not true or false", LabelTraefik, strconv.Quote(v))
	}
	return b, nil
}

// spec is an app's configuration with the defaults applied, as the driver uses it.
type spec struct {
	id        string
	container string // the container's name or id, as configured (its name for a label app)
	host      string // the engine's name
	labels    bool   // discovered from labels: re-checked before every start and stop
	method    string
	timeout   time.Duration
	ready     *probe.Config // nil: ready once running (and healthy)
	dependsOn []string
	price     float64
	currency  string
	busyURL   string        // busy_url, for reaper (AppPolicy); "": not set
	busyMax   time.Duration // busy_max; 0: reaper's default
	problem   string        // its labels could not be read: seen, never started or stopped
	grace     time.Duration // reaper.grace_period, for reaper (AppPolicy); 0: not set
	graceErr  error         // reaper.grace_period is set but cannot be used
	traefik   bool          // reaper.traefik=true, for reaper (AppPolicy)
	// traefikErr: reaper.traefik is set but cannot be read.
	traefikErr error
}

// resolve applies the defaults; host is the engine's name.
func (c *AppConfig) resolve(host string) spec {
	s := spec{
		id: c.ID, container: c.Container, host: host,
		method: c.StopMethod, timeout: c.StopTimeout.D(), ready: c.Ready,
		dependsOn: c.DependsOn, price: c.PricePerHour, currency: c.Currency,
		busyURL: c.BusyURL, busyMax: c.BusyMax.D(),
	}
	if s.method == "" {
		s.method = MethodStop
	}
	if s.timeout == 0 {
		s.timeout = DefaultStopTimeout
	}
	if s.currency == "" {
		s.currency = "EUR"
	}
	return s
}
