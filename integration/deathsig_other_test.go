//go:build !linux

package integration

import "os/exec"

func setDeathSignal(cmd *exec.Cmd) {}
