package proxy

// Redis Cluster's key → slot mapping: CRC16 (the XMODEM variant: polynomial
// 0x1021, initial value 0, no reflection) of the key, or of its hash tag,
// modulo 16384. The hash tag is the part between the first '{' and the
// first '}' after it, when that part is not empty; it lets a client put
// related keys in one slot.

// numSlots is the number of hash slots of a Redis Cluster.
const numSlots = 16384

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC-16/XMODEM.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// hashTag returns the part of key that decides its slot.
func hashTag(key []byte) []byte {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}": the whole key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}

// KeySlot is the Redis Cluster hash slot of key.
func KeySlot(key []byte) int { return int(crc16(hashTag(key))) & (numSlots - 1) }
