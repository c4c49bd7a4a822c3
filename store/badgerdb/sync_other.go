//go:build !linux

package badgerdb

import "os"

// fdatasync is fsync where there is no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

// syncData is fdatasync; raw system calls are Linux's only (sync_linux.go).
func syncData(f *os.File, _ bool) error { return f.Sync() }
