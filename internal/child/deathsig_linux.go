package child

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd when the thread that starts it
// ends.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
