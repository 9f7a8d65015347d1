// Package reaper puts apps nobody uses to sleep and wakes them on the next request.
//
// It holds the reaper plugin (request classification, holding, the answers given
// while an app sleeps), app records and statuses, the pure decision function Decide,
// the job that applies decisions through a paas.Client, wake asks, traffic
// accounting, and the Store interface with its in-memory implementation.
//
// Where things are:
//
//   - status.go: the six statuses and the Record of an app.
//   - decide.go: whether an app sleeps or wakes now (Decide, pure, takes now);
//     outcome.go: how the platform's answer to a start or a stop changes the
//     record. Only these two change a status.
//   - job.go and step.go: the leader's job, which observes each app under its
//     lock, calls Decide and acts on the platform.
//   - plugin.go: the reaper plugin on a route; protocol.go: the wire protocol as
//     one table (classify, answerFor); answers.go: the answers given in place of
//     the app.
//   - heldrequest.go: a held request, from the plugin's side (its body, parking,
//     the answer once its hold ends); hold.go: the node's holds and the per-app
//     waiter loop that releases them.
//   - engine.go: a node's view of its apps (records, claims of the routes), which
//     wires traffic.go (counted in memory, flushed to the store), wakeask.go
//     (coalesced wake asks) and hold.go together.
//   - store.go: the Store interface; memstore*.go and statefile.go: the single
//     node's store; watchers.go: record-change notifications for both stores.
//     Package storetest is the contract suite every store passes; package
//     valkeystore is the cluster's store.
//   - admin.go: the admin API of apps and settings; schedule.go: keep-up windows.
//   - events.go: the node's event stream; notify.go: what the Notifier (the
//     webhooks) is told, and when; eventqueue.go: the webhooks' queues in the
//     store (memstore_queue.go, valkeystore/queue.go).
package reaper
