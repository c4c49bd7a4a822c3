package onceup

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
)

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// crcTable is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
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

func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// Slot is the hash slot of key, as Redis Cluster computes it: the CRC16 of
// the key, or of its hash tag (what lies between the first '{' and the
// first '}' after it, when that is not empty), modulo 16384.
func Slot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// tags[s] is a short alphanumeric string whose slot is s: put between
// braces in a key name, it places that key in slot s.
var (
	tagsOnce sync.Once
	tags     [Slots]string
)

const tagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Tag returns the hash tag of slot s (0 <= s < Slots): the first string of
// one to four characters of tagAlphabet, shortest first, whose CRC16 lands
// in s.
func Tag(s int) string {
	tagsOnce.Do(func() {
		left := Slots
		buf := make([]byte, 0, 4)
		var walk func(n int) bool
		walk = func(n int) bool {
			if len(buf) == n {
				s := crc16(buf) % Slots
				if tags[s] == "" {
					tags[s] = string(buf)
					left--
				}
				return left == 0
			}
			for i := 0; i < len(tagAlphabet); i++ {
				buf = append(buf, tagAlphabet[i])
				done := walk(n)
				buf = buf[:len(buf)-1]
				if done {
					return true
				}
			}
			return false
		}
		for n := 1; n <= 4 && !walk(n); n++ {
		}
	})
	return tags[s]
}

// Names of the engine's own keys and channels. Each carries the slot's tag
// in braces, so it lives in the same slot as the user keys it serves.
const (
	tokenPrefix   = "oncekv:tok:{"
	outcomePrefix = "oncekv:end:{"
	channelPrefix = "oncekv:ev:{"
)

// TokenKey is the token counter of slot s: every key of the slot draws its
// tokens from it, so tokens grow per key even across a record's expiry.
func TokenKey(s int) string { return tokenPrefix + Tag(s) + "}" }

// Channel is the sharded pub/sub channel on which the scripts announce the
// outcomes of the runs of slot s's keys in database db (a standalone
// upstream has several; a cluster only db 0).
func Channel(s, db int) string {
	if db == 0 {
		return channelPrefix + Tag(s) + "}"
	}
	return channelPrefix + Tag(s) + "}" + strconv.Itoa(db)
}

// OutcomeKey names the short-lived outcome record of key (in slot s): the
// token, outcome and answer or message of its last run that ended without
// leaving a record to read (KEEP 0, a short KEEP, ABORT), so that a waiter
// that missed the announcement still learns how the run it waited for
// ended.
func OutcomeKey(s int, key []byte) string { return outcomePrefix + Tag(s) + "}" + string(key) }

// chanID numbers the channel of slot s in database db: the engine keeps
// one subscription per channel.
func chanID(db, s int) int { return db*Slots + s }

// channelOf is the channel chanID numbers.
func channelOf(id int) string { return Channel(id%Slots, id/Slots) }

// chanIDOf returns the chanID of an announcement channel, or -1 if ch is
// not one.
func chanIDOf(ch string) int {
	if len(ch) < len(channelPrefix)+2 || ch[:len(channelPrefix)] != channelPrefix {
		return -1
	}
	end := strings.IndexByte(ch[len(channelPrefix):], '}')
	if end <= 0 {
		return -1
	}
	end += len(channelPrefix) + 1
	db := 0
	if rest := ch[end:]; rest != "" {
		n, err := strconv.Atoi(rest)
		if err != nil || n <= 0 {
			return -1
		}
		db = n
	}
	s := Slot([]byte(ch[:end]))
	if Channel(s, db) != ch {
		return -1
	}
	return chanID(db, s)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
