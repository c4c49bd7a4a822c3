package app

import (
	"os"
	"runtime"
	"strconv"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
)

// ApplyProcs sets the number of Go processors the server runs on for
// cfg's procs directive, and returns the number in force. A positive
// procs is that number. 0 is the runtime's choice: the GOMAXPROCS
// environment variable when it holds one, else the runtime's default
// (the CPUs the process may use, its cgroup quota included), which the
// runtime keeps following as the quota or the affinity changes. CONFIG
// SET procs calls it again.
//
// 0 is the default, though one processor measured faster on part of the
// harness on a 2-core machine where redis-benchmark ran too: with a
// processor per core, a connection made ready by the network wakes
// another processor's thread, on the core the clients need. But it
// measured slower on as much of it: writes under appendfsync always,
// loads of new keys (Badger's flushes and compactions share the
// connections' processor), wake-ups of many waiters. README,
// Configuration, has the figures.
func ApplyProcs(cfg config.Config, log *zap.Logger) int {
	n := cfg.Procs
	if n <= 0 {
		if env, err := strconv.Atoi(os.Getenv("GOMAXPROCS")); err == nil && env > 0 {
			n = env
		}
	}
	if n > 0 {
		runtime.GOMAXPROCS(n)
	} else {
		// Calling GOMAXPROCS would stop the runtime's updates.
		runtime.SetDefaultGOMAXPROCS()
	}
	got := runtime.GOMAXPROCS(0)
	log.Debug("go processors", zap.Int("procs", got))
	return got
}
