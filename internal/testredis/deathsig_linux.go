package testredis

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd if the test process dies first,
// so that an interrupted test run leaves no servers behind.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
