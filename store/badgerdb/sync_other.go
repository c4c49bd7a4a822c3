//go:build !linux

package badgerdb

import "os"

// fdatasync is fsync where there is no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
