package badgerdb

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync makes a file's data durable without its timestamps (which
// fsync would also write, costing a journal commit per call), as Redis
// does for its AOF.
//
// The descriptor is used through SyscallConn, which holds a reference to
// it: a Close of f meanwhile (the log rotating while the syncer syncs)
// closes it only after the call, so it cannot be reused under it.
func fdatasync(f *os.File) error { return syncData(f, false) }

// syncData is fdatasync, made as a raw system call if raw is set: the
// runtime is not told of it, so its monitor thread is not woken, and the
// calling goroutine keeps its processor until the disk answers (see
// rawFsyncMax for when the logger does that).
func syncData(f *os.File, raw bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			if raw {
				err = nil
				if _, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, fd, 0, 0); e != 0 {
					err = e
				}
			} else {
				err = unix.Fdatasync(int(fd))
			}
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}
