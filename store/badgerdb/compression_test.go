package badgerdb

import (
	"fmt"
	"strings"
	"testing"
)

// openCompressed opens dir with the given table compression.
func openCompressed(tb testing.TB, dir, compression string) *DB {
	tb.Helper()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.Compression = compression
	s, err := Open(opts)
	if err != nil {
		tb.Fatalf("open with %q: %v", compression, err)
	}
	s.Start()
	return s
}

// tableSizes sums the on-disk and uncompressed sizes of Badger's tables.
func tableSizes(s *DB) (disk, raw int64) {
	for _, t := range s.bdb.Tables() {
		disk += int64(t.OnDiskSize)
		raw += int64(t.UncompressedSize)
	}
	return disk, raw
}

// Tables are written with the configured compression (none by default),
// and a store reopened with another one still reads the tables it wrote
// before: each table records its own.
func TestTableCompression(t *testing.T) {
	value := strings.Repeat("compressible ", 80)
	write := func(s *DB, prefix string) {
		for i := 0; i < 2000; i++ {
			set(t, s, 0, fmt.Sprintf("%s:%05d", prefix, i), str(value, 0))
		}
	}
	check := func(s *DB, prefix string) {
		for i := 0; i < 2000; i += 97 {
			k := fmt.Sprintf("%s:%05d", prefix, i)
			if v, ok := get(t, s, 0, k); !ok || v != value {
				t.Fatalf("%s = %.20q…, %v", k, v, ok)
			}
		}
	}
	for _, tc := range []struct {
		first, then string
		compressed  bool // whether the first one's tables are smaller on disk
	}{
		{first: "", then: "snappy", compressed: false},
		{first: "none", then: "zstd", compressed: false},
		{first: "snappy", then: "none", compressed: true},
		{first: "zstd", then: "", compressed: true},
	} {
		t.Run(tc.first+"-then-"+tc.then, func(t *testing.T) {
			dir := t.TempDir()
			s := openCompressed(t, dir, tc.first)
			write(s, "a")
			if err := s.Close(); err != nil { // flushes the memtable to a table
				t.Fatal(err)
			}
			s = openCompressed(t, dir, tc.first)
			disk, raw := tableSizes(s)
			if raw == 0 {
				t.Fatal("no table written")
			}
			if got := disk < raw/2; got != tc.compressed {
				t.Fatalf("compression %q: tables %d bytes on disk for %d uncompressed", tc.first, disk, raw)
			}
			s.Close()
			s = openCompressed(t, dir, tc.then)
			defer s.Close()
			check(s, "a")
			write(s, "b")
			check(s, "b")
		})
	}
	if _, err := Open(Options{Dir: t.TempDir(), Databases: 1, Compression: "lz4"}); err == nil ||
		!strings.Contains(err.Error(), `compression must be none, snappy or zstd, not "lz4"`) {
		t.Fatalf("open with lz4: %v", err)
	}
}
