package trigger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/pgtest"
	"github.com/reapergw/reaper/internal/testwait"
)

// postgres starts a real Postgres for the test and returns its URL.
func postgres(t *testing.T) string {
	t.Helper()
	srv := pgtest.Init(t).Run()
	if err := pgtest.AwaitQuery(context.Background(), srv.Addr); err != nil {
		t.Fatal(err)
	}
	return pgtest.URL(srv.Addr)
}

func pgExec(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// The SQL trigger wakes when its query answers a non-zero count, and not
// while it answers 0; a boolean query works alike.
func TestSQL_NonZeroCountWakes(t *testing.T) {
	dsn := postgres(t)
	pgExec(t, dsn, "CREATE TABLE jobs (id serial PRIMARY KEY, done boolean NOT NULL DEFAULT false)")
	every := conf.Duration(200 * time.Millisecond)
	rr := run(t,
		Config{ID: "pending", Wake: "worker", Every: every, SQL: &SQL{DSN: conf.Secret(dsn), Query: "SELECT count(*) FROM jobs WHERE NOT done"}},
		Config{ID: "any", Wake: "other", Every: every, SQL: &SQL{DSN: conf.Secret(dsn), Query: "SELECT EXISTS (SELECT 1 FROM jobs)"}},
	)
	rr.awaitChecks(t, "pending", ResultNone, 2)
	rr.awaitChecks(t, "any", ResultNone, 2)
	rr.wakes.none(t, "no job")

	pgExec(t, dsn, "INSERT INTO jobs DEFAULT VALUES")
	got := map[string]string{}
	for range 2 {
		w := rr.wakes.next(t, 20*time.Second, "a job inserted")
		got[w.id] = w.by
	}
	if got["worker"] != "trigger pending" || got["other"] != "trigger any" {
		t.Fatalf("wakes %v: want worker by trigger pending, other by trigger any", got)
	}
}

// A query that answers text is a failure the view shows, not work.
func TestSQL_TextAnswerIsAFailure(t *testing.T) {
	dsn := postgres(t)
	rr := run(t, Config{ID: "bad", Wake: "worker", Every: conf.Duration(200 * time.Millisecond),
		SQL: &SQL{DSN: conf.Secret(dsn), Query: "SELECT 'yes'"}})
	rr.awaitChecks(t, "bad", ResultError, 1)
	if v := rr.Views()[0]; !v.Failing || v.LastError == "" {
		t.Errorf("view %+v: want failing with the reason", v)
	}
	rr.wakes.none(t, "a query that answers text")
}

// A NOTIFY wakes the worker without any poll: the trigger's every is a day,
// and it looked once (LISTEN) before the notification.
func TestPostgresNotify_WakesAtOnceWithoutPolling(t *testing.T) {
	dsn := postgres(t)
	rr := run(t, Config{ID: "jobs-notify", Wake: "worker", Every: conf.Duration(24 * time.Hour),
		PostgresNotify: &PostgresNotify{DSN: conf.Secret(dsn), Channel: "new jobs"}})
	rr.awaitChecks(t, "jobs-notify", ResultNone, 1) // listening
	rr.wakes.none(t, "before a NOTIFY")
	pgExec(t, dsn, `NOTIFY "new jobs", 'job-1'`)
	w := rr.wakes.next(t, 20*time.Second, "after a NOTIFY")
	if w.id != "worker" || w.by != "trigger jobs-notify" {
		t.Fatalf("woke %+v", w)
	}
	if n := rr.counts.check("jobs-notify", ResultNone); n != 1 {
		t.Errorf("%d looks that found nothing: a LISTEN trigger must not poll", n)
	}
	if n := rr.counts.check("jobs-notify", ResultWork); n != 1 {
		t.Errorf("%d notifications counted, want 1", n)
	}
}

// A lost LISTEN connection is dialled again, and the next NOTIFY still wakes.
func TestPostgresNotify_ListensAgainAfterTheConnectionIsLost(t *testing.T) {
	dsn := postgres(t)
	rr := run(t, Config{ID: "n", Wake: "worker", PostgresNotify: &PostgresNotify{DSN: conf.Secret(dsn), Channel: "jobs"}})
	rr.awaitChecks(t, "n", ResultNone, 1)
	pgExec(t, dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'")
	rr.awaitChecks(t, "n", ResultError, 1)
	rr.awaitChecks(t, "n", ResultNone, 2) // listening again, after a second
	pgExec(t, dsn, "NOTIFY jobs")
	if w := rr.wakes.next(t, 20*time.Second, "a NOTIFY after the reconnection"); w.id != "worker" {
		t.Fatalf("woke %+v", w)
	}
}

// A follower's runner (Listen only, never Run) listens and fires: a NOTIFY
// reaches the Waker of a node that does not lead. Its polling trigger, the
// leader's, never looks.
func TestPostgresNotify_AFollowerListensAndFires(t *testing.T) {
	dsn := postgres(t)
	rr := follow(t, "n2",
		Config{ID: "jobs-notify", Wake: "worker", PostgresNotify: &PostgresNotify{DSN: conf.Secret(dsn), Channel: "jobs"}},
		Config{ID: "pending", Wake: "worker", Every: conf.Duration(100 * time.Millisecond), SQL: &SQL{DSN: conf.Secret(dsn), Query: "SELECT 1"}},
	)
	rr.awaitChecks(t, "jobs-notify", ResultNone, 1) // listening
	pgExec(t, dsn, "NOTIFY jobs")
	if w := rr.wakes.next(t, 20*time.Second, "a NOTIFY heard by a follower"); w.id != "worker" || w.by != "trigger jobs-notify" {
		t.Fatalf("woke %+v", w)
	}
	// The fire is recorded once the Waker returns: after the wake is seen.
	testwait.For(t, 20*time.Second, "the fire recorded", func() bool { return rr.Views()[0].Fires >= 1 })
	views := rr.Views()
	if v := views[0]; !v.Running || v.Node != "n2" || v.Fires != 1 || v.LastFire == nil {
		t.Errorf("the follower's view of the listening trigger: %+v, want running on n2 with one fire", v)
	}
	if v := views[1]; v.Running || v.LastCheck != nil {
		t.Errorf("the follower's view of the polling trigger: %+v, want neither running nor looked at", v)
	}
	if n := rr.counts.check("pending", ResultWork) + rr.counts.check("pending", ResultNone); n != 0 {
		t.Errorf("a follower looked %d times at a polling trigger's source: only the leader polls", n)
	}
}

// Every node of a cluster listens: a burst of NOTIFYs reaches each node's
// Waker (each asks; the store coalesces their asks), and the admin API's
// merged view lists each node listening, with their fires summed.
func TestPostgresNotify_EveryNodeHearsABurst(t *testing.T) {
	dsn := postgres(t)
	c := Config{ID: "jobs-notify", Wake: "worker", PostgresNotify: &PostgresNotify{DSN: conf.Secret(dsn), Channel: "jobs"}}
	nodes := []*running{run(t, c), follow(t, "n2", c), follow(t, "n3", c)}
	for _, rr := range nodes {
		rr.awaitChecks(t, "jobs-notify", ResultNone, 1)
	}
	for i := range 5 {
		pgExec(t, dsn, fmt.Sprintf("NOTIFY jobs, 'job-%d'", i))
	}
	for i, rr := range nodes {
		if w := rr.wakes.next(t, 20*time.Second, fmt.Sprintf("node %d after a burst of NOTIFYs", i+1)); w.id != "worker" {
			t.Fatalf("node %d woke %+v", i+1, w)
		}
		rr.awaitChecks(t, "jobs-notify", ResultWork, 5) // each NOTIFY is seen, the fires coalesce
	}
	merged := Merge(nodes[1].Views(), [][]View{nodes[2].Views(), nodes[0].Views()})
	if len(merged) != 1 || len(merged[0].Nodes) != 3 {
		t.Fatalf("merged %+v: want one trigger with three nodes", merged)
	}
	var fires int64
	for i, nv := range merged[0].Nodes {
		if want := fmt.Sprintf("n%d", i+1); nv.Node != want || !nv.Listening || nv.Fires < 1 || nv.LastCheck == nil {
			t.Errorf("node %d: %+v, want %s listening with a fire", i+1, nv, want)
		}
		fires += nv.Fires
	}
	if m := merged[0]; m.Fires != fires || !m.Running || m.LastFire == nil {
		t.Errorf("merged view %+v: want running, fires the nodes' sum (%d)", m, fires)
	}
}
