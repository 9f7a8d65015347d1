package trigger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// pingEvery is how often a LISTEN connection with no notification is pinged:
// a connection that died without a word (a dropped route, a killed server
// behind a proxy) is found within it, and listened to again.
const pingEvery = time.Minute

// listen keeps a LISTEN on c's channel while ctx lasts: a NOTIFY fires at once.
// A lost connection is dialled again after the back-off, never polled for.
// NOTIFYs sent while nobody listens are not kept by Postgres: every node
// listens (Listen), so one is lost only while no node does; pair the channel
// with a polling sql trigger when none may be missed even then.
func (r *Runner) listen(ctx context.Context, c *Config, st *state) {
	failures := 0
	for {
		connected, err := r.listenOnce(ctx, c, st)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0 // it worked for a while: start the back-off afresh
		}
		failures++
		r.looked(c, st, time.Now(), false, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff(failures)):
		}
	}
}

// listenOnce connects, listens and fires on each notification until the
// connection fails (err) or ctx ends; connected says whether LISTEN ran.
func (r *Runner) listenOnce(ctx context.Context, c *Config, st *state) (connected bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	conn, err := pgx.Connect(cctx, c.PostgresNotify.DSN.Reveal())
	if err != nil {
		cancel()
		return false, pgError("connect", err)
	}
	defer func() {
		closeCtx, done := context.WithTimeout(context.Background(), time.Second)
		defer done()
		_ = conn.Close(closeCtx)
	}()
	_, err = conn.Exec(cctx, "LISTEN "+pgx.Identifier{c.PostgresNotify.Channel}.Sanitize())
	cancel()
	if err != nil {
		return false, pgError("LISTEN", err)
	}
	r.looked(c, st, time.Now(), false, nil)
	r.log.Info("a wake trigger listens for notifications", "trigger", c.ID, "channel", c.PostgresNotify.Channel)
	for {
		wctx, stop := context.WithTimeout(ctx, pingEvery)
		_, err := conn.WaitForNotification(wctx)
		stop()
		switch {
		case ctx.Err() != nil:
			return true, nil
		case err == nil:
			r.looked(c, st, time.Now(), true, nil)
			r.fire(ctx, c, st)
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, done := context.WithTimeout(ctx, checkTimeout)
			err = conn.Ping(pctx)
			done()
			if err != nil {
				return true, pgError("ping", err)
			}
		default:
			return true, pgError("wait for a notification", err)
		}
	}
}
