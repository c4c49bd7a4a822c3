//go:build !(linux || darwin || freebsd)

package badgerdb

// openFileLimit reports no limit where the store does not read one.
func openFileLimit() (uint64, bool) { return 0, false }

// lockDir takes no lock where the store does not know Badger's.
func lockDir(string) (unlock func(), ok bool) { return func() {}, true }
