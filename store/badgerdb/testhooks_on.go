//go:build oncekv_testhooks

package badgerdb

import (
	"os"
	"strconv"
	"time"
)

// testGCInterval, when positive, replaces Options.GCInterval.
//
// The integration tests' server binary is built with the
// oncekv_testhooks tag, where ONCEKVTEST_VLOG_GC_MS=n makes every store
// run Badger's value-log GC every n milliseconds, with value log files
// of Badger's smallest size (1 MiB, so that the longest value a store
// takes is 1 MiB too): a test can then kill the server while the GC
// rewrites a file without writing hundreds of megabytes first. Builds
// without the tag have no such variable (testhooks_off.go).
var testGCInterval time.Duration

func init() {
	v := os.Getenv("ONCEKVTEST_VLOG_GC_MS")
	if v == "" {
		return
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms <= 0 {
		panic("ONCEKVTEST_VLOG_GC_MS=" + strconv.Quote(v) + ": want a positive number of milliseconds")
	}
	testGCInterval = time.Duration(ms) * time.Millisecond
	valueLogFileSize = 1 << 20
}
