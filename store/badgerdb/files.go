package badgerdb

import (
	"fmt"
	"math"
)

// Badger keeps each table's file open while the table lives, and its
// tables are 2 MiB at every level (tableSizeMultiplier): a keyspace's
// files grow with its data, one per 2 MiB, beside the clients'
// connections. Past the process's limit of open files, a flush or a
// compaction fails to create its table. openFilesWarning tells, at
// Open, when the tables already hold over tableFilesShare of the limit,
// while there is time to raise it.
const tableFilesShare = 2 // half

// openFilesWarning returns the warning to log when tables open files,
// out of a limit of limit, leave too little room for the data to grow
// and for connections; "" when they leave enough, or when there is no
// limit to tell (0, or none read).
func openFilesWarning(tables int, limit uint64, tableSize int64) string {
	if limit == 0 || limit == math.MaxUint64 || uint64(tables) <= limit/tableFilesShare {
		return ""
	}
	return fmt.Sprintf("the tables hold %d files open, and this process may open %d in all: "+
		"raise the limit of open files (ulimit -n; with Docker, --ulimit nofile=65536) "+
		"before the data grows past about %d MiB, or flushes and compactions will fail to create their tables",
		tables, limit, int64(limit)*tableSize>>20)
}
