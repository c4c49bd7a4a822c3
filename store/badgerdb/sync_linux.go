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
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			err = unix.Fdatasync(int(fd))
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
