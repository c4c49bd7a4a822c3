//go:build !linux

package testredis

import "os/exec"

func setDeathSignal(cmd *exec.Cmd) {}
