package main

import (
	"syscall"
	"testing"
)

func TestNodeMaxHeld(t *testing.T) {
	if got := nodeMaxHeld(250); got != 250 {
		t.Errorf("configured 250: got %d", got)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if got, want := nodeMaxHeld(0), int(min(lim.Cur/2, 1<<30)); got != want || got <= 0 {
		t.Errorf("default: got %d, want half the open-file limit %d", got, want)
	}
}
