package badgerdb

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

// Open warns when the tables' open files pass half the limit of open
// files, while the limit can still be raised before a flush or a
// compaction fails to create a table.
func TestOpenFilesWarning(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name   string
		tables int
		limit  uint64
		want   string // in the warning; "" for none
	}{
		{"no tables", 0, 1024, ""},
		{"half the limit", 512, 1024, ""},
		{"over half", 513, 1024, "hold 513 files open, and this process may open 1024"},
		{"the size it allows", 700, 1024, "past about 2048 MiB"},
		{"a large limit", 700, 1 << 20, ""},
		{"no limit read", 5000, 0, ""},
		{"unlimited", 5000, math.MaxUint64, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := openFilesWarning(tc.tables, tc.limit, 2*mib)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("openFilesWarning(%d, %d) = %q, want %q", tc.tables, tc.limit, got, tc.want)
			}
		})
	}
}

// The limit is read where the store reads it.
func TestOpenFileLimitRead(t *testing.T) {
	limit, ok := openFileLimit()
	if runtime.GOOS == "linux" && (!ok || limit == 0) {
		t.Fatalf("openFileLimit() = %d, %v on linux", limit, ok)
	}
}
