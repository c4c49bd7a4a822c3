package benchkit

import "syscall"

// RaiseNofile raises the soft limit on open files to at least n, if the
// hard limit allows (a thousand waiters need a thousand connections).
func RaiseNofile(n uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= n {
		return nil
	}
	l.Cur = min(max(n, l.Cur), l.Max)
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}
