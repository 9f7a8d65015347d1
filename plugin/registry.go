package plugin

import (
	"fmt"
	"sort"
	"sync"
)

// Info describes a plugin kind. It has no side effects: registering it starts
// nothing.
type Info struct {
	// ID is the name routes use in plugins[].plugin (e.g. "headers", "reaper").
	ID string
	// New returns a new instance with its defaults set. The route's config is then
	// decoded into it, so it must return a pointer to a struct with yaml tags.
	New func() Plugin
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Info{}
)

// Register adds a plugin kind. It panics on an empty id, a nil constructor or an id
// registered twice: these are programming errors, found when the binary starts.
func Register(info Info) {
	if info.ID == "" || info.New == nil {
		panic("plugin: Register needs an ID and a New function")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[info.ID]; dup {
		panic(fmt.Sprintf("plugin: %q registered twice", info.ID))
	}
	registry[info.ID] = info
}

// Lookup returns the plugin kind registered under id.
func Lookup(id string) (Info, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	info, ok := registry[id]
	return info, ok
}

// IDs lists the registered plugin kinds, sorted.
func IDs() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
