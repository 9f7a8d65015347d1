package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil || o.quick || len(o.sections) != 11 || !o.sections["notify"] || !o.sections["kube"] || !o.sections["auth"] || !o.sections["churn"] || !o.sections["tcp"] || !o.sections["python"] || !o.sections["cluster"] || !o.sections["leaderkill"] || o.profile != "" || o.seed != 0 {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"-quick", "-only", "wake, held", "-profile", "/tmp/p", "-seed", "42"}, io.Discard)
	if err != nil || !o.quick || !o.sections["wake"] || !o.sections["held"] || o.sections["awake"] || o.profile != "/tmp/p" || o.seed != 42 {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	if _, err := parseOptions([]string{"-only", "awake,speed"}, io.Discard); err == nil || !strings.Contains(err.Error(), `"speed"`) {
		t.Errorf("unknown part: %v", err)
	}
}

func TestLoadAverage(t *testing.T) {
	if f := strings.Fields(loadAverage()); len(f) != 3 {
		t.Errorf("loadAverage = %q, want three numbers", loadAverage())
	}
}
