//go:build unix

package commands

import "syscall"

// cpuTimes are the user and system CPU seconds of this process and of its
// waited-for children (INFO cpu), from getrusage(2).
func cpuTimes() (sys, user, sysChildren, userChildren float64) {
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil {
		sys, user = tv(self.Stime), tv(self.Utime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		sysChildren, userChildren = tv(children.Stime), tv(children.Utime)
	}
	return
}
