package app

import (
	"os"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/memlimit"
)

// memoryHeadroom is what a server needs beyond its configured caches:
// connections' buffers, Badger's table indexes and compaction buffers,
// and the staged writes that wait for the log.
const memoryHeadroom = 96 << 20

// MemoryLimit is the soft limit of the Go heap for cfg: the caches the
// configuration sizes (value cache, Badger's memtables, and its block
// cache when tables are compressed), plus headroom. Under it the garbage collector runs as usual; near it, it
// runs sooner instead of letting the heap double, which is what kept the
// RSS of a loaded server at two to three times its live data.
func MemoryLimit(cfg config.Config) int64 {
	// Badger's memtables: the store keeps 3 (store/badgerdb); the limit
	// allows for 6, so that a write burst, with compactions and the
	// applier's batches in flight, does not hold the heap at the limit,
	// where the collector runs all the time (measured: a third fewer
	// SET -d 256 -P 16 requests/s with a limit 16 MB lower).
	const memtables = 6
	limit := cfg.ValueCacheSize + memtables*cfg.MemTableSize + memoryHeadroom
	// The block cache holds decompressed copies of compressed blocks, in
	// the heap; an uncompressed block is cached as a view of the table's
	// memory map, which is not heap (and is trimmed, table-trim-ms).
	// Counting it anyway let the heap grow by as much: RSS with 1M keys
	// 211 MiB, against 170 without it (bench/harness -s memory).
	if c := cfg.TableCompression; c != "" && c != "none" {
		limit += cfg.BlockCacheSize
	}
	return limit
}

// ApplyMemoryLimit sets the Go runtime's soft memory limit to MemoryLimit,
// unless the GOMEMLIMIT environment variable sets one ("off" lifts it).
// A proxy (upstream set) has no caches to size, and keeps Go's default.
func ApplyMemoryLimit(cfg config.Config, log *zap.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" || cfg.Upstream != "" {
		return
	}
	limit := MemoryLimit(cfg)
	debug.SetMemoryLimit(limit)
	log.Debug("memory limit", zap.Int64("bytes", limit))
}

// MemoryGovernor returns what raises the soft limit set by
// ApplyMemoryLimit by memory-burst while the server is busy, and lowers
// it again once it is calm (package memlimit), with the commands
// processed and the keys the sweeper expired as its measure of activity,
// and writers held back by the store's back-pressure as a stall, not calm.
// Expirations count because a sweep is a stream of deletions that no
// command makes: after a load of ONCE cycles kept 60 s, the keys expiring
// en masse held the heap at the base limit with no command coming in, and
// the collector ran five times a second, taking over half the server's
// CPU; a PING meanwhile waited up to 96 ms. It is nil (a no-op) where
// ApplyMemoryLimit sets nothing: GOMEMLIMIT set, or proxy mode. Start it
// after Start, and Close it after Close.
func (a *App) MemoryGovernor() *memlimit.Governor {
	cfg := a.Config()
	if os.Getenv("GOMEMLIMIT") != "" || cfg.Upstream != "" || a.Commands == nil {
		return nil
	}
	log := a.log.Named("memory")
	return memlimit.New(memlimit.Config{
		Base:     MemoryLimit(cfg),
		Burst:    cfg.MemoryBurst,
		Activity: memlimit.Sum(a.Commands.CommandsProcessed, a.Store.Expired),
		Held:     func() bool { return a.Store.WritersHeld() > 0 },
		Changed: func(limit int64, busy bool) {
			log.Debug("heap limit", zap.Int64("bytes", limit), zap.Bool("busy", busy))
		},
	})
}
