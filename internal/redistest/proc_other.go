//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing where the kernel cannot tie a child's life to its
// parent's; the cleanups stop the server.
func setDeathSignal(*exec.Cmd) {}
