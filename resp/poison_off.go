//go:build !race && !oncekv_poison

package resp

// poisonReleased: Reader.Release overwrites what it is given back only in
// the builds of poison_on.go.
const poisonReleased = false
