package paas

import (
	"slices"
	"strings"
	"testing"
)

func TestKnownApps_DeclaredWinsOverDiscovered(t *testing.T) {
	// Each step is one call; an app is a string "declared:x" or "discovered:x"
	// so that the test sees which one a getter returns.
	type step struct {
		op, id string
		ok     bool // what Discover reports (op "discover")
	}
	tests := []struct {
		name  string
		steps []step
		// what each id looks up to afterwards ("" if none), and All sorted
		lookup map[string]string
		all    []string
	}{
		{
			name:   "empty",
			lookup: map[string]string{"a": ""},
			all:    []string{},
		},
		{
			name:   "declared",
			steps:  []step{{op: "declare", id: "a"}},
			lookup: map[string]string{"a": "declared:a", "b": ""},
			all:    []string{"declared:a"},
		},
		{
			name:   "discovered",
			steps:  []step{{op: "discover", id: "b", ok: true}},
			lookup: map[string]string{"a": "", "b": "discovered:b"},
			all:    []string{"discovered:b"},
		},
		{
			name:   "a declared id is not discovered",
			steps:  []step{{op: "declare", id: "a"}, {op: "discover", id: "a", ok: false}},
			lookup: map[string]string{"a": "declared:a"},
			all:    []string{"declared:a"},
		},
		{
			name:   "declaring an id drops its discovered app",
			steps:  []step{{op: "discover", id: "a", ok: true}, {op: "declare", id: "a"}},
			lookup: map[string]string{"a": "declared:a"},
			all:    []string{"declared:a"},
		},
		{
			name:   "rediscovered: replaced, not doubled",
			steps:  []step{{op: "discover", id: "b", ok: true}, {op: "discover", id: "b", ok: true}},
			lookup: map[string]string{"b": "discovered:b"},
			all:    []string{"discovered:b"},
		},
		{
			name:   "forget drops a discovered app",
			steps:  []step{{op: "declare", id: "a"}, {op: "discover", id: "b", ok: true}, {op: "forget", id: "b"}},
			lookup: map[string]string{"a": "declared:a", "b": ""},
			all:    []string{"declared:a"},
		},
		{
			name:   "forget keeps a declared app",
			steps:  []step{{op: "declare", id: "a"}, {op: "forget", id: "a"}},
			lookup: map[string]string{"a": "declared:a"},
			all:    []string{"declared:a"},
		},
		{
			name:   "both kinds, side by side",
			steps:  []step{{op: "declare", id: "a"}, {op: "declare", id: "c"}, {op: "discover", id: "b", ok: true}},
			lookup: map[string]string{"a": "declared:a", "b": "discovered:b", "c": "declared:c", "d": ""},
			all:    []string{"declared:a", "declared:c", "discovered:b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k KnownApps[string]
			for _, s := range tt.steps {
				switch s.op {
				case "declare":
					k.Declare(s.id, "declared:"+s.id)
				case "discover":
					if got := k.Discover(s.id, "discovered:"+s.id); got != s.ok {
						t.Fatalf("Discover(%q) = %v, want %v", s.id, got, s.ok)
					}
				case "forget":
					k.Forget(s.id)
				default:
					t.Fatalf("unknown op %q", s.op)
				}
			}
			for id, want := range tt.lookup {
				got, ok := k.Lookup(id)
				if got != want || ok != (want != "") {
					t.Errorf("Lookup(%q) = %q, %v; want %q, %v", id, got, ok, want, want != "")
				}
				if owns := k.Owns(id); owns != (want != "") {
					t.Errorf("Owns(%q) = %v, want %v", id, owns, want != "")
				}
				dec, okDec := k.Declared(id)
				dis, okDis := k.Discovered(id)
				if okDec && okDis {
					t.Errorf("%q is both declared (%q) and discovered (%q)", id, dec, dis)
				}
				if wantDec := strings.HasPrefix(want, "declared:"); okDec != wantDec || (okDec && dec != want) {
					t.Errorf("Declared(%q) = %q, %v; want it %v", id, dec, okDec, wantDec)
				}
				if wantDis := strings.HasPrefix(want, "discovered:"); okDis != wantDis || (okDis && dis != want) {
					t.Errorf("Discovered(%q) = %q, %v; want it %v", id, dis, okDis, wantDis)
				}
			}
			all, n := k.All(), 0
			for range k.EachDeclared() {
				n++
			}
			if !allDeclaredFirst(all, n) {
				t.Errorf("All() = %q: the %d declared apps do not come first", all, n)
			}
			slices.Sort(all)
			if !slices.Equal(all, tt.all) {
				t.Errorf("All() = %q, want %q", all, tt.all)
			}
			var disc []string
			for id, a := range k.EachDiscovered() {
				if a != "discovered:"+id {
					t.Errorf("EachDiscovered yields %q under %q", a, id)
				}
				disc = append(disc, a)
			}
			if k.NumDiscovered() != len(disc) {
				t.Errorf("NumDiscovered() = %d, EachDiscovered yields %d", k.NumDiscovered(), len(disc))
			}
		})
	}
}

// allDeclaredFirst reports whether the first n of all are the declared apps
// and the rest the discovered ones.
func allDeclaredFirst(all []string, n int) bool {
	for i, a := range all {
		if strings.HasPrefix(a, "declared:") != (i < n) {
			return false
		}
	}
	return true
}

func TestKnownApps_ForgetWhileRangingDiscovered(t *testing.T) {
	var k KnownApps[string]
	k.Declare("a", "declared:a")
	for _, id := range []string{"b", "c", "d"} {
		k.Discover(id, "discovered:"+id)
	}
	for id := range k.EachDiscovered() { // the Docker driver forgets as it reconciles
		if id != "c" {
			k.Forget(id)
		}
	}
	if got := k.All(); !slices.Equal(got[:1], []string{"declared:a"}) || len(got) != 2 || got[1] != "discovered:c" {
		t.Fatalf("after forgetting all but c: All() = %q, want [declared:a discovered:c]", got)
	}
}
