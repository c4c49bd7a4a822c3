package proxy

import "github.com/oncekv/oncekv/proxy/onceup"

// Redis Cluster's key → slot mapping is onceup.Slot: CRC16 (XMODEM) of the
// key, or of its hash tag, modulo 16384. The ONCE engine needs it to name
// keys in a given slot; the router uses the same function, so a ONCE
// record and the key it belongs to can never be routed apart.

// numSlots is the number of hash slots of a Redis Cluster.
const numSlots = onceup.Slots

// KeySlot is the Redis Cluster hash slot of key.
func KeySlot(key []byte) int { return onceup.Slot(key) }
