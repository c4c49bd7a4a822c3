package app

import (
	"runtime/debug"
	"testing"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
)

// TestMemoryLimit: the runtime's soft limit follows the configured caches
// (issue 6: a server's RSS is sized by its configuration), GOMEMLIMIT wins,
// and a proxy keeps Go's default.
func TestMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })

	cfg := config.Default()
	cfg.ValueCacheSize, cfg.BlockCacheSize, cfg.MemTableSize = 100<<20, 50<<20, 10<<20
	// Compressed tables: the block cache's decompressed blocks are heap.
	cfg.TableCompression = "snappy"
	if got, want := MemoryLimit(cfg), int64(100<<20+50<<20+6*10<<20+memoryHeadroom); got != want {
		t.Fatalf("MemoryLimit with snappy = %d, want %d", got, want)
	}
	// Uncompressed (the default): its blocks are views of memory maps.
	cfg.TableCompression = "none"
	want := int64(100<<20 + 6*10<<20 + memoryHeadroom)
	if got := MemoryLimit(cfg); got != want {
		t.Fatalf("MemoryLimit = %d, want %d", got, want)
	}

	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(1 << 62)
	ApplyMemoryLimit(cfg, zap.NewNop())
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Fatalf("limit in force = %d, want %d", got, want)
	}

	t.Setenv("GOMEMLIMIT", "off")
	debug.SetMemoryLimit(1 << 62)
	ApplyMemoryLimit(cfg, zap.NewNop())
	if got := debug.SetMemoryLimit(-1); got != 1<<62 {
		t.Fatalf("GOMEMLIMIT set, but the limit became %d", got)
	}

	t.Setenv("GOMEMLIMIT", "")
	cfg.Upstream = "redis://127.0.0.1:1"
	ApplyMemoryLimit(cfg, zap.NewNop())
	if got := debug.SetMemoryLimit(-1); got != 1<<62 {
		t.Fatalf("proxy mode set a limit: %d", got)
	}
}
