package process

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/paas"
)

var (
	_ paas.Pricer = (*Driver)(nil)
	_ paas.Meter  = (*Driver)(nil)
)

// rssEvery bounds how often an app's memory is measured (a walk of /proc).
const rssEvery = 10 * time.Second

// Cost implements paas.Pricer: the app's price_per_hour, and the resident memory
// of its process group, measured now if it runs (at most every rssEvery), else
// as last measured while it ran (0 if never, since this driver started).
func (d *Driver) Cost(_ context.Context, pa paas.App) (paas.Cost, error) {
	a, err := d.lookup(pa)
	if err != nil {
		return paas.Cost{}, err
	}
	a.mu.Lock()
	p, rss, at := a.proc, a.rss, a.rssAt
	a.mu.Unlock()
	if p != nil && time.Since(at) >= rssEvery {
		if n := groupRSS(p.pgid); n > 0 {
			rss = n
			a.mu.Lock()
			a.rss, a.rssAt = n, time.Now()
			a.mu.Unlock()
		}
	}
	return paas.Cost{PerHour: a.spec.price, Currency: a.spec.currency, MemoryBytes: rss}, nil
}

// Measured implements paas.Meter: how long the last start of the app took, from
// its spawn to its readiness (0 if this driver has not started it: an adopted
// process is not timed), and its resident memory as Cost last measured it. It
// never waits.
func (d *Driver) Measured(pa paas.App) paas.Measures {
	a, err := d.lookup(pa)
	if err != nil {
		return paas.Measures{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return paas.Measures{BootTime: a.boot, MemoryBytes: a.rss, MemoryAt: a.rssAt}
}

// groupRSS sums the resident memory of the live members of process group pgid,
// from /proc/<pid>/statm; 0 when none can be read.
func groupRSS(pgid int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	page := int64(os.Getpagesize())
	var total int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err != nil || st.pgrp != pgid || !st.alive() {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/statm")
		if err != nil {
			continue
		}
		f := strings.Fields(string(raw))
		if len(f) < 2 {
			continue
		}
		if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			total += pages * page
		}
	}
	return total
}
