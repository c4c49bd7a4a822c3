//go:build !linux

package benchkit

// RaiseNofile does nothing outside Linux.
func RaiseNofile(uint64) error { return nil }
