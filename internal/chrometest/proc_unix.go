//go:build unix

package chrometest

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the browser in a process group of its own, so stopping it reaches every process it
// spawned and nothing else.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills the group led by the browser's main process: renderers and helpers included. It
// does not wait for the grandchildren to be reaped (by init, which may take a second): killed, they no
// longer touch the profile. A group already gone is fine.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
