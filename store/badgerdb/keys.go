package badgerdb

import (
	"encoding/binary"

	"github.com/oncekv/oncekv/store"
)

// The layout of Badger keys. Every key starts with a one-byte space tag so
// that each space is one contiguous, byte-ordered range:
//
//	'k' db(2) key              → kind(1) expireAt(8) data   the keyspace
//	'x' db(2) expireAt(8) key  → empty                      the expiry index
//	'm' name                   → bytes                      server metadata
//	'e' obj(8) sub             → bytes                      an object's elements
//	'r' obj(8)                 → db(2) key                  who owns an object
//
// A value that owns an object (store.Value.Obj) has objFlag set in its
// kind byte and the object's number after its deadline (objHeaderLen).
const (
	spaceKeys   = 'k'
	spaceExpiry = 'x'
	spaceMeta   = 'm'
	spaceElems  = 'e'
	spaceOwners = 'r'
	headerLen   = 9
	// objHeaderLen is the header of a value that owns an object.
	objHeaderLen = headerLen + 8
	objFlag      = 0x80
)

// appendElemKey appends the Badger key of element sub of object obj.
func appendElemKey(b []byte, obj uint64, sub []byte) []byte {
	b = append(b, spaceElems)
	b = binary.BigEndian.AppendUint64(b, obj)
	return append(b, sub...)
}

// ownerKey is the Badger key of the record of who owns object obj.
func ownerKey(obj uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spaceOwners}, obj)
}

func dataKey(db int, key []byte) []byte {
	return appendDataKey(make([]byte, 0, 3+len(key)), db, key)
}

// appendDataKey appends key's Badger key in db to b.
func appendDataKey(b []byte, db int, key []byte) []byte {
	b = append(b, spaceKeys, byte(db>>8), byte(db))
	return append(b, key...)
}

func dbPrefix(space byte, db int) []byte {
	return []byte{space, byte(db >> 8), byte(db)}
}

func expiryKey(db int, at int64, key []byte) []byte {
	return appendExpiryKey(make([]byte, 0, 11+len(key)), db, at, key)
}

// appendExpiryKey appends the expiry index entry of key in db at
// deadline at to b.
func appendExpiryKey(b []byte, db int, at int64, key []byte) []byte {
	b = append(b, spaceExpiry)
	b = binary.BigEndian.AppendUint16(b, uint16(db))
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	return append(b, key...)
}

func metaKey(name string) []byte {
	return append([]byte{spaceMeta}, name...)
}

func encodeValue(v store.Value) []byte {
	n := headerLen
	if v.Obj != 0 {
		n = objHeaderLen
	}
	b := make([]byte, n+len(v.Data))
	b[0] = byte(v.Kind)
	binary.BigEndian.PutUint64(b[1:], uint64(v.ExpireAt))
	if v.Obj != 0 {
		b[0] |= objFlag
		binary.BigEndian.PutUint64(b[headerLen:], v.Obj)
	}
	copy(b[n:], v.Data)
	return b
}

// decodeValue returns a Value that aliases b.
func decodeValue(b []byte) (store.Value, bool) {
	if len(b) < headerLen {
		return store.Value{}, false
	}
	if b[0]&objFlag != 0 {
		if len(b) < objHeaderLen {
			return store.Value{}, false
		}
		return store.Value{
			Kind:     store.Kind(b[0] &^ objFlag),
			ExpireAt: int64(binary.BigEndian.Uint64(b[1:])),
			Obj:      binary.BigEndian.Uint64(b[headerLen:]),
			Data:     b[objHeaderLen:],
		}, true
	}
	return store.Value{
		Kind:     store.Kind(b[0]),
		ExpireAt: int64(binary.BigEndian.Uint64(b[1:])),
		Data:     b[headerLen:],
	}, true
}
