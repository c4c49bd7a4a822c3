//go:build !linux

package child

import "os/exec"

func setDeathSignal(cmd *exec.Cmd) {}
