package trigger

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reapergw/reaper/internal/conf"
)

// Kinds of trigger: which of Config's sources is set.
const (
	KindRedisList      = "redis_list"
	KindRedisDue       = "redis_due"
	KindSQL            = "sql"
	KindHTTP           = "http"
	KindPostgresNotify = "postgres_notify"
	KindEndpoint       = "endpoint" // {id, wake, token}: the producer endpoint
)

// Bounds of the configuration.
const (
	DefaultEvery = 30 * time.Second
	MinEvery     = 100 * time.Millisecond
	MaxEvery     = 24 * time.Hour
	MaxLead      = 7 * 24 * time.Hour
	// MinTokenLen keeps a producer's token out of reach of guessing, even
	// before the rate limit.
	MinTokenLen = 16
	maxIDLen    = 64
)

// Config is one wake trigger (triggers[] in the file): what it watches, and
// the app (or group) it wakes when that says there is work.
type Config struct {
	// ID names the trigger: in logs, metrics, the history ("trigger <id>")
	// and the producer endpoint's path.
	ID string `yaml:"id"`
	// Wake is the id of the app (or group) a fire wakes.
	Wake string `yaml:"wake"`
	// Every is how often a polling trigger looks (default 30s).
	Every conf.Duration `yaml:"every"`

	RedisList      *RedisList      `yaml:"redis_list"`
	RedisDue       *RedisDue       `yaml:"redis_due"`
	SQL            *SQL            `yaml:"sql"`
	HTTP           *HTTP           `yaml:"http"`
	PostgresNotify *PostgresNotify `yaml:"postgres_notify"`
	// Token makes the trigger the producer endpoint's:
	// POST /.well-known/reaper/wake/<id> with Authorization: Bearer <token>.
	Token conf.Secret `yaml:"token"`
}

// Redis is where a redis trigger looks.
type Redis struct {
	Addr     string      `yaml:"addr"`
	Key      string      `yaml:"key"`
	Username string      `yaml:"username"`
	Password conf.Secret `yaml:"password"`
	DB       int         `yaml:"db"`
}

// RedisList wakes when the list at Key is not empty (LLEN > 0).
type RedisList struct {
	Redis `yaml:",inline"`
}

// RedisDue wakes when a member of the sorted set at Key (score: Unix seconds)
// is due within Lead.
type RedisDue struct {
	Redis `yaml:",inline"`
	Lead  conf.Duration `yaml:"lead"`
}

// SQL wakes when Query's first column of its first row is a non-zero number
// or true (Postgres).
type SQL struct {
	DSN   conf.Secret `yaml:"dsn"`
	Query string      `yaml:"query"`
}

// HTTP wakes when a GET of URL answers 200; 204 is no work, anything else a
// failure.
type HTTP struct {
	URL conf.Secret `yaml:"url"`
}

// PostgresNotify wakes at once on a NOTIFY on Channel (LISTEN; no polling).
type PostgresNotify struct {
	DSN     conf.Secret `yaml:"dsn"`
	Channel string      `yaml:"channel"`
}

// Kind is which source the trigger has ("" when none or several: Validate's
// error).
func (c *Config) Kind() string {
	var kinds []string
	for k, set := range map[string]bool{
		KindRedisList: c.RedisList != nil, KindRedisDue: c.RedisDue != nil, KindSQL: c.SQL != nil,
		KindHTTP: c.HTTP != nil, KindPostgresNotify: c.PostgresNotify != nil, KindEndpoint: c.Token.IsSet(),
	} {
		if set {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// Polls reports whether the trigger is one the leader polls.
func (c *Config) Polls() bool {
	switch c.Kind() {
	case KindRedisList, KindRedisDue, KindSQL, KindHTTP:
		return true
	}
	return false
}

// EveryOrDefault is how often the trigger polls.
func (c *Config) EveryOrDefault() time.Duration {
	if c.Every == 0 {
		return DefaultEvery
	}
	return c.Every.D()
}

// Validate checks the trigger on its own; the configuration decoder calls it
// for each triggers[] item, path naming it (triggers[1]). The checks across
// triggers (an id used twice, an unknown app) are CheckAll's.
func (c *Config) Validate(path string, errs *conf.Errors) {
	checkID(c.ID, conf.Key(path, "id"), errs)
	if c.Wake == "" {
		errs.Add(conf.Key(path, "wake"), "is required: the id of the app (or group) to wake")
	}
	if c.Every != 0 && (c.Every.D() < MinEvery || c.Every.D() > MaxEvery) {
		errs.Add(conf.Key(path, "every"), "must be between %s and %s", MinEvery, MaxEvery)
	}
	n := 0
	for _, set := range []bool{c.RedisList != nil, c.RedisDue != nil, c.SQL != nil, c.HTTP != nil, c.PostgresNotify != nil, c.Token.IsSet()} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs.Add(path, "needs exactly one of redis_list, redis_due, sql, http, postgres_notify or token (found %d)", n)
	}
	if c.RedisList != nil {
		c.RedisList.check(conf.Key(path, KindRedisList), errs)
	}
	if c.RedisDue != nil {
		c.RedisDue.check(conf.Key(path, KindRedisDue), errs)
		if l := c.RedisDue.Lead.D(); l > MaxLead {
			errs.Add(conf.Key(conf.Key(path, KindRedisDue), "lead"), "must be at most %s", MaxLead)
		}
	}
	if c.SQL != nil {
		checkDSN(c.SQL.DSN, conf.Key(conf.Key(path, KindSQL), "dsn"), errs)
		if strings.TrimSpace(c.SQL.Query) == "" {
			errs.Add(conf.Key(conf.Key(path, KindSQL), "query"), "is required")
		}
	}
	if c.HTTP != nil {
		checkURL(c.HTTP.URL, conf.Key(conf.Key(path, KindHTTP), "url"), errs)
	}
	if c.PostgresNotify != nil {
		p := conf.Key(path, KindPostgresNotify)
		checkDSN(c.PostgresNotify.DSN, conf.Key(p, "dsn"), errs)
		if c.PostgresNotify.Channel == "" || len(c.PostgresNotify.Channel) > 63 {
			errs.Add(conf.Key(p, "channel"), "is required (at most 63 bytes, Postgres's limit of a name)")
		}
	}
	if c.Token.IsSet() && len(c.Token.Reveal()) < MinTokenLen {
		errs.Add(conf.Key(path, "token"), "must be at least %d characters", MinTokenLen)
	}
	if c.Token.IsSet() && c.Every != 0 {
		errs.Add(conf.Key(path, "every"), "has no meaning for a producer's trigger (token): producers call it")
	}
}

// checkID checks a trigger's id: it goes into a path, logs and metrics.
func checkID(id, path string, errs *conf.Errors) {
	if id == "" {
		errs.Add(path, "is required")
		return
	}
	if len(id) > maxIDLen {
		errs.Add(path, "must be at most %d characters", maxIDLen)
		return
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			errs.Add(path, "%s: only letters, digits, '-', '_' and '.'", strconv.Quote(id))
			return
		}
	}
}

func (r *Redis) check(path string, errs *conf.Errors) {
	if _, port, err := net.SplitHostPort(r.Addr); err != nil || port == "" {
		errs.Add(conf.Key(path, "addr"), "must be host:port, not %s", strconv.Quote(r.Addr))
	}
	if r.Key == "" {
		errs.Add(conf.Key(path, "key"), "is required")
	}
	if r.DB < 0 || r.DB > 15 {
		errs.Add(conf.Key(path, "db"), "must be between 0 and 15")
	}
}

// checkDSN checks a Postgres connection string without ever quoting it (it
// may hold a password).
func checkDSN(dsn conf.Secret, path string, errs *conf.Errors) {
	if !dsn.IsSet() {
		errs.Add(path, "is required (postgres://user:password@host:port/db)")
		return
	}
	if _, err := pgconn.ParseConfig(dsn.Reveal()); err != nil {
		errs.Add(path, "is not a Postgres connection string (postgres://user:password@host:port/db)")
	}
}

// checkURL checks an http trigger's URL without quoting it (its query may hold
// a token).
func checkURL(s conf.Secret, path string, errs *conf.Errors) {
	u, err := url.Parse(s.Reveal())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs.Add(path, "must be an http:// or https:// URL")
	}
}

// CheckAll checks the triggers together: ids used once, and each wake naming
// an app or group the configuration knows (known). path is "triggers".
func CheckAll(cs []Config, path string, known func(id string) bool, errs *conf.Errors) {
	seen := map[string]int{}
	for i, c := range cs {
		p := conf.Index(path, i)
		if j, dup := seen[c.ID]; dup && c.ID != "" {
			errs.Add(conf.Key(p, "id"), "%s is already the id of %s", strconv.Quote(c.ID), conf.Index(path, j))
		} else {
			seen[c.ID] = i
		}
		if c.Wake != "" && known != nil && !known(c.Wake) {
			errs.Add(conf.Key(p, "wake"), "%s is not an app that a route manages, nor a group", strconv.Quote(c.Wake))
		}
	}
}
