//go:build race || oncekv_poison

package resp

// poisonReleased: Reader.Release overwrites what it is given back (see
// there). It is on with the race detector and with the oncekv_poison tag
// (the server binary that the integration tests build).
const poisonReleased = true
