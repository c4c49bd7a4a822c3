//go:build !(linux || darwin || freebsd)

package badgerdb

// presenceBlocks allocates p's n blocks in the Go heap.
func presenceBlocks(_ *presence, n int64) []presenceBlock {
	return make([]presenceBlock, n)
}
