package app

import (
	"runtime"
	"sync"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
)

// startProcs is the GOMAXPROCS the runtime chose before the server
// changed it: the CPUs the process may use (its affinity mask and, on
// Linux, its cgroup quota), or the GOMAXPROCS environment variable.
var startProcs = sync.OnceValue(func() int { return runtime.GOMAXPROCS(0) })

// Procs is the number of Go processors the server runs on for a procs
// directive of n: n itself when it is positive, else the runtime's
// choice (cpus).
//
// 0 is the default, though one processor measured faster on part of the
// harness on a 2-core machine where redis-benchmark ran too: with a
// processor per core, a connection made ready by the network wakes
// another processor's thread, on the core the clients need. But it
// measured slower on as much of it: writes under appendfsync always,
// loads of new keys (Badger's flushes and compactions share the
// connections' processor), wake-ups of many waiters. README,
// Configuration, has the figures.
func Procs(n, cpus int) int {
	if n > 0 {
		return n
	}
	return cpus
}

// ApplyProcs sets GOMAXPROCS for cfg's procs directive (Procs) and
// returns the number in force. CONFIG SET procs calls it again; procs 0
// then returns to the number the process started with.
func ApplyProcs(cfg config.Config, log *zap.Logger) int {
	n := Procs(cfg.Procs, startProcs())
	if runtime.GOMAXPROCS(n) != n {
		log.Debug("go processors", zap.Int("procs", n), zap.Int("cpus", startProcs()))
	}
	return n
}
