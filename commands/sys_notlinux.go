//go:build !linux

package commands

import "runtime"

// osName is the operating system and architecture Go names.
func osName() string { return runtime.GOOS + " " + runtime.GOARCH }

// multiplexingAPI and monotonicClock are not told here: INFO omits them.
const (
	multiplexingAPI = ""
	monotonicClock  = ""
)

// totalSystemMemory is not measured on this system.
func totalSystemMemory() int64 { return 0 }

// rssBytes is not measured on this system.
func rssBytes() int64 { return 0 }
