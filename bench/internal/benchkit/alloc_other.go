//go:build !linux

package benchkit

import "io/fs"

// allocated returns the length of a file: its blocks are not known here.
func allocated(info fs.FileInfo) int64 { return info.Size() }
