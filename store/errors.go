package store

import "errors"

var (
	// ErrReadOnly is returned by a write inside View.
	ErrReadOnly = errors.New("write in a read-only transaction")
	// ErrClosed is returned by a store that has been closed.
	ErrClosed = errors.New("store is closed")
	// ErrBadDB is returned for a database index out of range.
	ErrBadDB = errors.New("DB index is out of range")
	// ErrWrite is wrapped around a failure to persist writes, such as a full
	// disk: the store refuses writes until it can write again.
	ErrWrite = errors.New("store cannot persist writes")
)
