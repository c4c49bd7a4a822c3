package badgerdb

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync makes a file's data durable without its timestamps (which
// fsync would also write, costing a journal commit per call), as Redis
// does for its AOF.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
