//go:build !unix

package chrometest

import "os/exec"

// setProcessGroup does nothing where process groups do not exist.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the browser's main process; its children follow when their pipe to it closes.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
