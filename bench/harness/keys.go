package main

// The keys and values the harness loads: key i is "key:" and i in 12
// digits (16 bytes), the very names `redis-benchmark -r N` reads, so that
// its GETs over a loaded keyspace hit; value i is size printable bytes
// drawn from i by splitmix64, so values differ, do not compress (oncekv
// can compress its tables, table-compression; Redis stores strings as
// they are) and can be checked after a restart.

import (
	"fmt"
	"strconv"
)

// keyDigits is the width of the number in a key.
const keyDigits = 12

// appendKey appends key i to b.
func appendKey(b []byte, i int64) []byte {
	b = append(b, "key:"...)
	var d [keyDigits]byte
	for j := keyDigits - 1; j >= 0; j-- {
		d[j] = byte('0' + i%10)
		i /= 10
	}
	return append(b, d[:]...)
}

// keyName returns key i.
func keyName(i int64) string { return string(appendKey(nil, i)) }

const valueAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// appendValue appends value i of size bytes to b.
func appendValue(b []byte, i int64, size int) []byte {
	state := uint64(i) * 0x2545f4914f6cdd1d
	for n := 0; n < size; {
		state = splitmix64(state)
		x := state
		for k := 0; k < 10 && n < size; k++ {
			b = append(b, valueAlphabet[x&63])
			x >>= 6
			n++
		}
	}
	return b
}

// valueOf returns value i of size bytes.
func valueOf(i int64, size int) string { return string(appendValue(nil, i, size)) }

// appendSet appends the RESP command SET key(i) value(i) to b.
func appendSet(b []byte, i int64, size int) []byte {
	b = append(b, "*3\r\n$3\r\nSET\r\n$"...)
	b = strconv.AppendInt(b, 4+keyDigits, 10)
	b = append(b, '\r', '\n')
	b = appendKey(b, i)
	b = append(b, "\r\n$"...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, '\r', '\n')
	b = appendValue(b, i, size)
	return append(b, '\r', '\n')
}

// checkKeyRange refuses key numbers that do not fit the key format.
func checkKeyRange(n int64) error {
	if n < 0 || n > 999_999_999_999 {
		return fmt.Errorf("%d keys do not fit %d-digit key names", n, keyDigits)
	}
	return nil
}
