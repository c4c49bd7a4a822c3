//go:build !oncekv_testhooks

package badgerdb

// testGCInterval, when positive, replaces Options.GCInterval. Only the
// oncekv_testhooks build sets it (testhooks_on.go).
const testGCInterval = 0
