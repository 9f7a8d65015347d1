package main

import "syscall"

// nodeMaxHeld is the node-wide bound on held requests: the configured one, or
// half the process's open-file limit (each held request keeps its connection
// open; the other half stays for the requests of awake apps and their backends).
func nodeMaxHeld(configured int) int {
	if configured > 0 {
		return configured
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	return int(min(lim.Cur/2, 1<<30))
}
