package trigger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/valkey-io/valkey-go"
)

// A checker looks once at a polling trigger's source: work is true when there
// is some. Its errors never hold a password, a DSN or a URL's query.
type checker interface {
	check(ctx context.Context, now time.Time) (work bool, err error)
	close()
}

// checkTimeout bounds one look: a source that hangs is a failure, not a stuck
// loop.
const checkTimeout = 10 * time.Second

// newChecker builds the checker of a polling trigger (Polls is true).
func newChecker(c *Config, client *http.Client) checker {
	switch {
	case c.RedisList != nil:
		return &redisChecker{cfg: c.RedisList.Redis, look: func(ctx context.Context, r valkey.Client, _ time.Time) (bool, error) {
			n, err := r.Do(ctx, r.B().Llen().Key(c.RedisList.Key).Build()).AsInt64()
			return n > 0, err
		}}
	case c.RedisDue != nil:
		lead := c.RedisDue.Lead.D()
		return &redisChecker{cfg: c.RedisDue.Redis, look: func(ctx context.Context, r valkey.Client, now time.Time) (bool, error) {
			cmd := r.B().Zrangebyscore().Key(c.RedisDue.Key).Min("-inf").Max(dueBound(now, lead)).Limit(0, 1).Build()
			members, err := r.Do(ctx, cmd).AsStrSlice()
			return len(members) > 0, err
		}}
	case c.SQL != nil:
		return &sqlChecker{dsn: c.SQL.DSN.Reveal(), query: c.SQL.Query}
	case c.HTTP != nil:
		return &httpChecker{url: c.HTTP.URL.Reveal(), client: client}
	}
	return nil
}

// redisChecker runs look on a client it opens at its first look, and again
// after a look that failed for want of a connection.
type redisChecker struct {
	cfg    Redis
	look   func(ctx context.Context, r valkey.Client, now time.Time) (bool, error)
	mu     sync.Mutex
	client valkey.Client
}

func (r *redisChecker) check(ctx context.Context, now time.Time) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client == nil {
		c, err := valkey.NewClient(valkey.ClientOption{
			InitAddress: []string{r.cfg.Addr}, Username: r.cfg.Username, Password: r.cfg.Password.Reveal(),
			SelectDB: r.cfg.DB, ClientName: "reaper-trigger", ForceSingleClient: true, DisableCache: true,
			Dialer:             net.Dialer{Timeout: 5 * time.Second},
			ReadBufferEachConn: 16 << 10, WriteBufferEachConn: 16 << 10,
			DisableRetry: true, // the loop retries, with its back-off
		})
		if err != nil {
			return false, fmt.Errorf("redis at %s: %w", r.cfg.Addr, err)
		}
		r.client = c
	}
	work, err := r.look(ctx, r.client, now)
	if err != nil && !valkey.IsValkeyNil(err) {
		if !isServerError(err) { // the connection, not the command: dial again next time
			r.client.Close()
			r.client = nil
		}
		return false, fmt.Errorf("redis at %s: %w", r.cfg.Addr, err)
	}
	return work, nil
}

// isServerError reports whether err is the server's answer (WRONGTYPE, NOAUTH…)
// rather than a broken connection.
func isServerError(err error) bool {
	_, ok := valkey.IsValkeyErr(err)
	return ok
}

func (r *redisChecker) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		r.client.Close()
		r.client = nil
	}
}

// sqlChecker runs its query on a connection it keeps between looks.
type sqlChecker struct {
	dsn, query string
	mu         sync.Mutex
	conn       *pgx.Conn
}

func (s *sqlChecker) check(ctx context.Context, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil || s.conn.IsClosed() {
		c, err := pgx.Connect(ctx, s.dsn)
		if err != nil {
			return false, pgError("connect", err)
		}
		s.conn = c
	}
	var v any
	err := s.conn.QueryRow(ctx, s.query).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		if ctx.Err() != nil || s.conn.IsClosed() {
			s.closeConn()
		}
		return false, pgError("query", err)
	}
	return truthy(v)
}

// pgError keeps what pgx says of a failure, which names the host and user but
// never the password.
func pgError(what string, err error) error { return fmt.Errorf("postgres %s: %w", what, err) }

// truthy is the SQL trigger's verdict on its query's first value: a non-zero
// number or true is work; zero, false or NULL none; anything else a failure
// (a query that answers text is a mistake worth seeing).
func truthy(v any) (bool, error) {
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case int64:
		return x != 0, nil
	case int32:
		return x != 0, nil
	case int16:
		return x != 0, nil
	case float64:
		return x != 0, nil
	case float32:
		return x != 0, nil
	case *big.Int:
		return x.Sign() != 0, nil
	case pgtype.Numeric:
		f, err := x.Float64Value()
		return err == nil && f.Valid && f.Float64 != 0, err
	}
	return false, fmt.Errorf("the query's first value is a %T: it must be a number or a boolean", v)
}

func (s *sqlChecker) closeConn() {
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
}

func (s *sqlChecker) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeConn()
}

// httpChecker GETs its URL: 200 is work, 204 none.
type httpChecker struct {
	url    string
	client *http.Client
}

// maxHTTPBody bounds what is read of an answer (to reuse the connection).
const maxHTTPBody = 64 << 10

func (h *httpChecker) check(ctx context.Context, _ time.Time) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return false, errors.New("GET: the URL cannot be requested")
	}
	req.Header.Set("User-Agent", "reaper-trigger")
	resp, err := h.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("GET: %w", urlFree(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHTTPBody))
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNoContent:
		return false, nil
	}
	return false, fmt.Errorf("GET answered %d (200 is work, 204 none)", resp.StatusCode)
}

// urlFree is err without the URL a *url.Error quotes (its query may hold a
// token).
func urlFree(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		msg := ue.Err.Error()
		if u, perr := url.Parse(ue.URL); perr == nil && u.RawQuery != "" {
			msg = strings.ReplaceAll(msg, u.RawQuery, "…")
		}
		return errors.New(msg)
	}
	return err
}

func (h *httpChecker) close() {}
