package benchkit

import (
	"io/fs"
	"syscall"
)

// allocated returns the bytes of disk a file takes.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
