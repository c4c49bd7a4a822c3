//go:build !(linux || darwin || freebsd)

package badgerdb

// openFileLimit reports no limit where the store does not read one.
func openFileLimit() (uint64, bool) { return 0, false }
