//go:build linux || darwin || freebsd

package badgerdb

import "syscall"

// openFileLimit is this process's limit of open files (its soft limit,
// which Go raises to the hard one when it starts).
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}
