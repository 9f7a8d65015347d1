package paas

import (
	"iter"
	"maps"
)

// KnownApps is a driver's half of Owner: the apps it knows, by id, each either
// declared in its configuration or discovered from what the platform carries
// (a container's labels, a workload's annotations). A declared app wins: an id
// that is declared is never recorded as discovered, so each id names one app.
//
// KnownApps is not safe for concurrent use: the driver guards it with the lock
// that guards the rest of its state, so that what it reads of the apps and
// what it changes stay in step. The declared apps are fixed once the driver is
// built (Declare is called only then), so reading them alone (Declared,
// EachDeclared) needs no lock after that. The zero value is ready to use; A is
// the driver's app, most often a pointer (its zero value is what the getters
// return for an unknown id).
type KnownApps[A any] struct {
	declared   map[string]A
	discovered map[string]A
}

// Declare records a declared app under id, replacing any declared before under
// it, and drops a discovered app of that id.
func (k *KnownApps[A]) Declare(id string, a A) {
	if k.declared == nil {
		k.declared = map[string]A{}
	}
	k.declared[id] = a
	delete(k.discovered, id)
}

// Discover records a discovered app under id, replacing any discovered before
// under it. It reports false, recording nothing, when id is declared.
func (k *KnownApps[A]) Discover(id string, a A) bool {
	if _, ok := k.declared[id]; ok {
		return false
	}
	if k.discovered == nil {
		k.discovered = map[string]A{}
	}
	k.discovered[id] = a
	return true
}

// Forget drops the discovered app of this id (its workload or container is
// gone, or no longer claims it). A declared app stays: it is not forgotten.
func (k *KnownApps[A]) Forget(id string) { delete(k.discovered, id) }

// Lookup returns the app of this id, the declared one else the discovered one,
// and whether there is one.
func (k *KnownApps[A]) Lookup(id string) (A, bool) {
	if a, ok := k.declared[id]; ok {
		return a, true
	}
	a, ok := k.discovered[id]
	return a, ok
}

// Declared returns the declared app of this id, and whether there is one.
func (k *KnownApps[A]) Declared(id string) (A, bool) {
	a, ok := k.declared[id]
	return a, ok
}

// Discovered returns the discovered app of this id, and whether there is one.
func (k *KnownApps[A]) Discovered(id string) (A, bool) {
	a, ok := k.discovered[id]
	return a, ok
}

// Owns reports whether an app of this id is declared or discovered.
func (k *KnownApps[A]) Owns(id string) bool {
	_, ok := k.Lookup(id)
	return ok
}

// All returns every app, the declared ones then the discovered ones (each
// group in no particular order), in a new slice.
func (k *KnownApps[A]) All() []A {
	out := make([]A, 0, len(k.declared)+len(k.discovered))
	for _, a := range k.declared {
		out = append(out, a)
	}
	for _, a := range k.discovered {
		out = append(out, a)
	}
	return out
}

// EachDeclared yields the declared apps with their ids, in no particular order.
func (k *KnownApps[A]) EachDeclared() iter.Seq2[string, A] { return maps.All(k.declared) }

// EachDiscovered yields the discovered apps with their ids, in no particular
// order. The loop may Forget the app it is given.
func (k *KnownApps[A]) EachDiscovered() iter.Seq2[string, A] { return maps.All(k.discovered) }

// NumDiscovered is how many apps are discovered.
func (k *KnownApps[A]) NumDiscovered() int { return len(k.discovered) }
