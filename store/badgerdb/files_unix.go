//go:build linux || darwin || freebsd

package badgerdb

import (
	"os"
	"syscall"
)

// openFileLimit is this process's limit of open files (its soft limit,
// which Go raises to the hard one when it starts).
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}

// lockDir takes the lock Badger's Open takes on dir (flock of the
// directory), for as long as unlock is not called; ok is false when
// another store holds it.
func lockDir(dir string) (unlock func(), ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}, true // Badger's Open reports it
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
