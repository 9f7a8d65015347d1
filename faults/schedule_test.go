package main

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestNewSchedule_TheSeedDecidesEverything(t *testing.T) {
	a, b := newSchedule(42, 40*time.Second, 3), newSchedule(42, 40*time.Second, 3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two schedules of one seed differ")
	}
	if c := newSchedule(43, 40*time.Second, 3); reflect.DeepEqual(a.faults, c.faults) {
		t.Error("seeds 42 and 43 plan the same faults")
	}
}

func TestNewSchedule_NodeFaultsOneAtATimeAndPaaSAndRedisFaultsToo(t *testing.T) {
	for seed := range uint64(200) {
		s := newSchedule(seed, 60*time.Second, 3)
		for _, group := range [][]faultKind{nodeKinds, paasKinds, {kindRedis}} {
			var prev *fault
			for i, f := range s.faults {
				if !slices.Contains(group, f.kind) {
					continue
				}
				if prev != nil && f.at < prev.at+prev.lasts {
					t.Fatalf("seed %d: %s at %s overlaps %s at %s for %s", seed, f.kind, f.at, prev.kind, prev.at, prev.lasts)
				}
				prev = &s.faults[i]
			}
		}
		for _, f := range s.faults {
			if f.at < 0 || f.at > s.duration || f.app < 0 || f.app >= 3 || f.node < 0 || f.node >= clusterSize {
				t.Fatalf("seed %d: %+v", seed, f)
			}
		}
	}
}

func TestNewSchedule_EveryKindComesUp(t *testing.T) {
	seen := map[faultKind]bool{}
	for seed := range uint64(100) {
		for _, f := range newSchedule(seed, 40*time.Second, 3).faults {
			seen[f.kind] = true
		}
	}
	for _, k := range allKinds {
		if !seen[k] {
			t.Errorf("no schedule of 100 plans %q", k)
		}
	}
}

func TestPlanTraffic_EveryKindEveryAppAndIdleSpells(t *testing.T) {
	plan := planTraffic(rand.New(rand.NewPCG(7, 7)), 60*time.Second, 3)
	kinds := map[reqKind]int{}
	perApp := map[int][]time.Duration{}
	bigPosts := 0
	for i, p := range plan {
		if i > 0 && p.at < plan[i-1].at {
			t.Fatalf("not in order at %d", i)
		}
		if p.id != "r"+strconv.Itoa(i+1) {
			t.Fatalf("id %q at %d", p.id, i)
		}
		kinds[p.kind]++
		if p.kind != kindMonitor {
			perApp[p.app] = append(perApp[p.app], p.at)
		}
		if p.kind == kindPost && p.size > 64<<10 {
			bigPosts++
		}
	}
	for _, k := range allReqKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s in a minute of traffic: %v", k, kinds)
		}
	}
	if bigPosts == 0 {
		t.Error("no POST larger than 64 KiB (the streamed path)")
	}
	for app := range 3 {
		longest := time.Duration(0)
		for i := 1; i < len(perApp[app]); i++ {
			longest = max(longest, perApp[app][i]-perApp[app][i-1])
		}
		if longest <= gracePeriod+jobInterval {
			t.Errorf("app %d: longest idle spell %s, want room to sleep", app, longest)
		}
	}
}
