//go:build !linux

package benchkit

import "syscall"

// ChildAttr is nil outside Linux: children outlive a killed benchmark.
func ChildAttr() *syscall.SysProcAttr { return nil }

// RaiseNofile does nothing outside Linux.
func RaiseNofile(uint64) error { return nil }
