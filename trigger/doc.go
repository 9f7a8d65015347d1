// Package trigger wakes apps that no request wakes: queue workers and
// schedulers, woken when their work appears (triggers[] in the file).
//
// A trigger watches one source and wakes one app (or group) through a Waker
// (reaper.Engine.WakeFor: the operator's wake path, named "trigger <id>" in
// the history). The polling triggers (redis_list, redis_due, sql, http) run
// only while Runner.Run does: on the leader, for one term. The listening one
// (postgres_notify) runs while Runner.Listen does: on every node, for its
// whole life, so that a NOTIFY sent while the leader changes is still heard
// (Postgres keeps none that nobody listens to); the Waker stores a follower's
// ask for the leader. The producer endpoint's triggers ({id, wake, token}) are
// answered by every node's gateway listener.
//
// Files:
//
//   - config.go: the configuration of a trigger and its checks (Validate,
//     CheckAll across triggers).
//   - decide.go: the loops' decisions, pure (when to look next, the back-off,
//     a redis_due's bound, when a failure is logged).
//   - check.go: one look at each polling source (LLEN, ZRANGEBYSCORE, a SQL
//     query, a GET).
//   - runner.go: the Runner: a loop per polling trigger, what each did (View),
//     the fires through the Waker.
//   - listen.go: postgres_notify's LISTEN, dialled again with a back-off.
//   - endpoint.go: the producer endpoint, POST /.well-known/reaper/wake/<id>
//     with the trigger's Bearer token, rate limited.
//   - admin.go: the admin API's GET /api/triggers, merged across a cluster's
//     nodes (a listening trigger lists each node's view).
package trigger
