// Package reaper puts apps nobody uses to sleep and wakes them on the next request.
//
// It holds the reaper plugin (request classification, holding, the answers given
// while an app sleeps), app records and statuses, the pure decision function Decide,
// the job that applies decisions through a paas.Client, wake asks, traffic
// accounting, and the Store interface with its in-memory implementation.
//
// Where things are, grouped by who reads them (every file of the package is
// named once):
//
// The decisions (pure, take now, table-tested):
//
//   - status.go: the six statuses and the Record of an app.
//   - decide.go: whether an app sleeps or wakes now (Decide); outcome.go: how
//     the platform's answer to a start or a stop changes the record. Only these
//     two change a status.
//   - idle.go: the idle clock and an operator's "sleep now", which Decide uses;
//     operator.go: what an operator asks beyond the idle clock (keep warm, sleep
//     now) as the record keeps it; schedule.go: keep-up windows; hint.go: an
//     app's own policy (a container's label) against its routes'; boots.go:
//     failed boots, their back-off and the crash loop that ends in Error;
//     group.go: groups and depends_on (DecideGroup: whether a group is in
//     use, when it sleeps, which member stops next; StartOrder).
//
// The leader's job:
//
//   - job.go and step.go: the job, which observes each app under its lock,
//     calls Decide and acts on the platform.
//   - prewake.go (which visits recur, pure) and prewakejob.go (the job's side):
//     learned pre-wake.
//   - busy.go (whether a busy_url lets an idle app sleep, pure) and
//     busyprobe.go (the job's side: the GETs in the background): a busy
//     worker is not put to sleep.
//   - savings.go: the time, money and GiB-hours an app spent asleep.
//   - jobgroup.go: the job's side of groups and depends_on (a wake ask
//     stored for the whole wake set, each step told what its group says, the
//     apps a change concerns looked at at once); topology.go: the groups and
//     dependencies the engine knows (SetTopology, and each app's
//     paas.PolicyHint.DependsOn from its driver), group members, former
//     members and dependencies managed without a route; depindex.go: the
//     managed apps' depends_on read once per look, and the cycles the apps'
//     own hints make refused.
//
// A request's path, on every node:
//
//   - plugin.go: the reaper plugin on a route, which reaches the engine only
//     through the port below (its Route, Engine.Options); config.go: its
//     configuration on one route (the reference's keys); notactivity.go: its
//     not_activity paths (a crawler's robots.txt: served, never traffic);
//     protocol.go: the wire protocol as one table (classify, answerFor);
//     answers.go: the answers given in place of the app; wellknown.go:
//     reaper's own paths under /.well-known/reaper/ on every host; preview.go:
//     a route's waiting page as a browser would get it; liveevents.go: the
//     waiting page's live progress stream, and progress.go: how far a wake
//     went, as the page shows it (pure).
//   - heldrequest.go: a held request, from the plugin's side (its body,
//     parking, the answer once its hold ends), held through the plugin's own
//     Route (port.go); hold.go: the node's holds and the
//     per-app waiter loop that releases them; release.go: a crowd released at
//     the pace its app can take; resend.go: a released request sent again
//     when its just-woken app drops its connection; wakelimit.go: the wake
//     limits per client and per node.
//   - commit.go: the one path of a record change: commit (write, tell,
//     apply) for both writers, the job and the operators' actions; Apply and
//     the ordered list of the features' hooks every node runs at a change of
//     its view; tell, which feeds the event stream, the history and the
//     webhooks.
//   - engine.go: a node's view of its apps (records, claims of the routes),
//     which wires traffic.go (counted in memory, flushed to the store),
//     wakeask.go (coalesced wake asks) and hold.go together; awake.go: why an
//     app is awake (who moved its idle clock); eta.go: the learned ETA of a
//     wake.
//   - port.go: the holds, traffic and wake asks of a Route claimed on an
//     app, with no *plugin.Exchange: HTTP (heldrequest.go) is its first user,
//     TCP (package tcproute) the next; porthold.go: the hold in its parts
//     (Wait, StartHold for a parked caller, HoldEnd with the record it ended
//     on) for a transport that decides its own answers; portread.go: what a
//     transport reads of its app (its record, its wake, its ETA), none of it
//     waiting.
//
// The stores:
//
//   - store.go: the Store interface; memstore.go, with memstore_records.go,
//     memstore_asks.go, memstore_locks.go, memstore_traffic.go,
//     memstore_history.go, memstore_queue.go and memstore_watch.go, and
//     statefile.go: the single node's store; watchers.go: record-change
//     notifications for both stores. Package storetest is the contract suite
//     every store passes; package valkeystore is the cluster's store.
//
// What operators and other programs are told:
//
//   - admin.go: the admin API of apps and settings; adminactions.go: the
//     operators' actions on an app (wake, sleep now, hold awake, release,
//     reset); wakefor.go: the same wake asked by a wake trigger (package
//     trigger), named in the history; admingroups.go: groups in the admin
//     API (their views, the actions on a group's id); adminreap.go: the
//     reference's _reap; adminwatch.go: the
//     API's views over time (why awake, recent wakes, the event stream);
//     admintcp.go: the TCP routes and their connections in the API (package
//     tcproute fills them); adminwire.go: its requests and answers on the wire, and the prefixes it
//     is mounted on (package adminapi is its client, for the CLI and the
//     dashboard). They reach the engine only through its exported calls, as
//     the plugin does (pluginport_test.go): the port's read side (Managed,
//     Record, Held, OpenEverywhere, Awake, ETA, OpenEvents) and
//     portoperator.go, its operators' side (Change: an operator's change of a
//     record under the app's lock, committed; AskWakeNow; TellAction). They
//     stay in this package: their wire types and pure views (SavingsOf,
//     sleepRefusal) go with the records, savings.go also keeps the job's
//     savings clock (accountSleep), and the tests that check the engine's
//     order through the API use the package's own rigs.
//   - events.go: the node's event stream; notify.go: the Notifier (the
//     webhooks), both told through tell (commit.go); eventqueue.go: the
//     webhooks' queues in the store (memstore_queue.go, valkeystore/queue.go);
//     observe.go: the Observer the metrics implement.
package reaper
