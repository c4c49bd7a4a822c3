package store

import "errors"

var (
	// ErrReadOnly is returned by a write inside View.
	ErrReadOnly = errors.New("write in a read-only transaction")
	// ErrClosed is returned by a store that has been closed.
	ErrClosed = errors.New("store is closed")
	// ErrBadDB is returned for a database index out of range.
	ErrBadDB = errors.New("DB index is out of range")
	// ErrKeyTooLong is returned by a write of a key longer than MaxKeyLen.
	ErrKeyTooLong = errors.New("key is too long")
	// ErrElemTooLong is returned by a write of an element whose name is
	// longer than MaxElemLen.
	ErrElemTooLong = errors.New("element name is too long")
	// ErrValueTooLong is returned by a write of a value longer than
	// MaxValueLen.
	ErrValueTooLong = errors.New("value is too long")
	// ErrWrite is wrapped around a failure to persist writes, such as a full
	// disk: the store refuses writes until it can write again.
	ErrWrite = errors.New("store cannot persist writes")
)

// MaxKeyLen is the longest key a store accepts for writing, in bytes:
// Badger takes keys of up to 65,000 bytes, and the longest key the store
// builds from a client's key is its expiry index entry, 11 bytes more.
const MaxKeyLen = 65000 - 11

// MaxElemLen is the longest element name (Tx.SetElem) a store accepts,
// in bytes: Badger's 65,000 less the 9 bytes that name the object.
const MaxElemLen = 65000 - 9

// MaxValueLen is the longest value a store accepts for writing, in bytes:
// Badger takes values of up to its value log's file size, 64 MiB, and the
// store keeps a value behind a 9-byte header (kind and deadline). Badger
// refuses a longer one only once the log holds it, for good: every later
// write would wait behind it, and the log's replay would fail at every
// start.
const MaxValueLen = 64<<20 - 9
