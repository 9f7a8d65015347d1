// Package paastest holds what tests need of package paas: a recording fake
// platform, and the contract every paas.Client must meet.
//
// Fake is a platform for reaper's tests: apps whose state follows starts and
// stops instantly or after steps the test controls, every call recorded, and
// errors injected on demand.
//
// Run is the contract, as a test suite that each driver runs against itself, as
// reaper/storetest is for stores. A new driver passes it:
//
//	func TestDriver_Contract(t *testing.T) {
//		paastest.Run(t, func(t *testing.T) paastest.Harness {
//			d := newDriver(t, "web", "api") // closed in t.Cleanup
//			return paastest.Harness{Client: d, Apps: [2]paas.App{{ID: "web"}, {ID: "api"}}, …}
//		})
//	}
//
// The suite speaks to the client only through the interfaces of package paas,
// and checks what their godoc promises: a stopped app is observed SHOULD_BE_DOWN;
// after Start it reaches SHOULD_BE_UP (WANTS_TO_BE_UP on the way) with its last
// deployment OK DEPLOY, and after Stop SHOULD_BE_DOWN with OK UNDEPLOY (the
// actions reaper's decision reads); concurrent Starts make one start and a Start
// on an app that is up none; Stop of an app that is down does nothing; an unknown
// app is paas.ErrNotFound for every call; a cancelled context returns at once,
// with its error if any; the error kinds of a start that fails, an app never
// deployed, an app that must not be stopped, a platform that cannot be reached;
// a stop made from outside is observed. It checks the optional interfaces the
// client has: a paas.Watcher reports each change of an app's observation (the
// suite follows a start and a stop on the reports alone) and stops calling once
// its context ends; a paas.DeploymentReader says nil, nil for an app never
// deployed; a paas.BatchObserver agrees with Observe and leaves out unknown apps.
//
// Drivers differ in what their platform is like, and the Harness says so: which
// apps exist, how to count the starts the platform made and the instances that
// run (processes, containers, Clever Cloud instances), whether the app serves,
// how to stop it from outside, and whether the platform's state lags behind an
// ask (Clever Cloud's SHOULD_BE_DOWN until a deployment begins) or refuses an
// ask while another runs (paas.ErrBusy). A check whose means the harness does not
// give is skipped, and says so.
//
// Start returns when the platform accepted the ask, not when the app is up: the
// suite polls Observe with a deadline (or waits on Watch's reports) and never
// sleeps. Every subtest gets a fresh harness; they run one after the other.
package paastest
