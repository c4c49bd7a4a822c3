package badgerdb

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Badger gets a block cache only where tables are compressed: configured
// compression, or tables a store wrote compressed before it was reopened
// without (blockCacheSize). Uncompressed blocks are read in place.
func TestBlockCacheOnlyForCompressedTables(t *testing.T) {
	for _, tc := range []struct {
		first, then string // compression writing the tables, then reopening ("-": no first open)
		cache       bool
	}{
		{first: "-", then: "", cache: false},
		{first: "-", then: "zstd", cache: true},
		{first: "none", then: "none", cache: false},
		{first: "none", then: "snappy", cache: true},
		{first: "zstd", then: "none", cache: true},
		{first: "snappy", then: "", cache: true},
	} {
		t.Run(tc.first+"-then-"+tc.then, func(t *testing.T) {
			dir := t.TempDir()
			if tc.first != "-" {
				s := openCompressed(t, dir, tc.first)
				for i := 0; i < 500; i++ {
					set(t, s, 0, fmt.Sprintf("k:%05d", i), str("value", 0))
				}
				if err := s.Close(); err != nil { // flushes the memtable to a table
					t.Fatal(err)
				}
			}
			s := openCompressed(t, dir, tc.then)
			defer s.Close()
			if tc.first != "-" && len(s.bdb.Tables()) == 0 {
				t.Fatal("no table written")
			}
			if got := s.bdb.BlockCacheMetrics() != nil; got != tc.cache {
				t.Fatalf("block cache: %v, want %v", got, tc.cache)
			}
			if tc.first != "-" {
				if v, ok := get(t, s, 0, "k:00321"); !ok || v != "value" {
					t.Fatalf("k:00321 = %q, %v", v, ok)
				}
			}
		})
	}
}

func TestTablesCompressed(t *testing.T) {
	if tablesCompressed(t.TempDir()) {
		t.Fatal("a directory with no manifest has compressed tables")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("not a manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !tablesCompressed(dir) {
		t.Fatal("an unreadable manifest does not keep the cache")
	}
	opts := DefaultOptions(t.TempDir())
	opts.BlockCacheSize = 0
	opts.Compression = "zstd"
	if got := blockCacheSize(opts); got != minBlockCache {
		t.Fatalf("block cache with zstd and size 0: %d, want %d", got, minBlockCache)
	}
}
