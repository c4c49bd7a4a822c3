// Package store defines the keyspace that commands run against: numbered
// logical databases of binary keys, each holding one typed value with an
// optional deadline in Unix milliseconds.
//
// A Store promises:
//
//   - Update runs its function with exclusive access to the whole keyspace, so
//     a read-modify-write of any number of keys is atomic (KV-1, MULTI/EXEC).
//     View runs with shared access: any number of Views run at once, never
//     beside an Update.
//   - No read ever returns a value past its deadline (KV-4); expired keys are
//     removed in the background by a sweeper.
//   - Scan visits keys in byte order (KV-7).
//   - A write is visible to every later transaction as soon as Update
//     returns; it is durable once the returned Ticket is done, according to
//     the store's fsync policy (KV-6). A transaction that read a write not
//     yet durable gets a ticket for it too, so nothing is told to a client
//     before it is as durable as an acknowledged write (as Redis sends no
//     reply before its AOF fsync under appendfsync always).
//
// It does not promise that a write is durable when Update returns: wait on
// the Ticket before acknowledging it to a client.
package store

import "context"

// Kind is the type of the value a key holds.
type Kind byte

// The kinds of value a key can hold. Their byte values are persisted.
const (
	KindString Kind = 's'
	KindOnce   Kind = 'o'
	// KindHash holds a hash, encoded by internal/hashcodec.
	KindHash Kind = 'h'
	// KindSet is a set of binary members; Value.Data is the command
	// layer's encoding of them (commands/setcodec.go).
	KindSet Kind = 'S'
	// KindZSet is a sorted set, its Data encoded by internal/zcodec.
	KindZSet Kind = 'z'
	// KindList is a list: a small one's elements in the encoding of
	// internal/listenc; a large one an object (commands/listobj.go).
	KindList Kind = 'l'
)

// String returns the name TYPE answers for the kind.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindOnce:
		return "once"
	case KindHash:
		return "hash"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindList:
		return "list"
	}
	return "none"
}

// Value is what a key holds.
type Value struct {
	Kind Kind
	// Data is the payload; callers must not modify a slice returned by Get.
	Data []byte
	// ExpireAt is the deadline in Unix milliseconds; 0 means no deadline.
	ExpireAt int64
	// Obj is the object (Tx.NewObj) whose elements the value owns, 0
	// for none: a collection too large to rewrite whole on every write
	// keeps its members apart, each under its own key.
	Obj uint64
}

// Expired reports whether v is past its deadline at now (Unix ms).
func (v Value) Expired(now int64) bool {
	return v.ExpireAt != 0 && v.ExpireAt <= now
}

// Tx is access to the keyspace inside View or Update.
type Tx interface {
	// Now is the transaction's clock in Unix milliseconds, fixed for its
	// whole run so that a MULTI block sees one instant.
	Now() int64
	// Get returns the live value of key in db. It neither keeps nor
	// changes key (the ONCE engine passes a view of a string's bytes).
	Get(db int, key []byte) (Value, bool, error)
	// Set stores v under key, replacing any value. It keeps neither key
	// nor v.Data, and changes neither: the caller may reuse them.
	Set(db int, key []byte, v Value) error
	// Delete removes key and reports whether a live value was there.
	Delete(db int, key []byte) (bool, error)
	// Scan calls fn for each live key >= from in byte order until fn
	// returns false or an error.
	Scan(db int, from []byte, fn func(key []byte, v Value) (bool, error)) error
	// Len is the number of keys in db, counting expired keys that the
	// sweeper has not removed yet (as Redis's DBSIZE does).
	Len(db int) int
	// Expiring is the number of keys of db that have a deadline.
	Expiring(db int) int
	// Flush removes every key of the databases dbs, as one operation: a
	// crash in the middle of it leaves all of them flushed or none.
	Flush(dbs ...int) error
	// Meta reads a named server-wide record (e.g. a persisted counter).
	Meta(name string) ([]byte, error)
	// SetMeta writes a named server-wide record.
	SetMeta(name string, value []byte) error

	// NewObj makes a new, empty object for key in db to own: a set of
	// elements, each a binary name (sub) with a value, stored apart so
	// that one of them is read or written without the others. The
	// object lives while a live value of key (in whatever database, under
	// whatever name RENAME, MOVE or SWAPDB give it) has Obj set to it;
	// once none has (the value is deleted, replaced, expired or
	// flushed), its elements are removed in the background. An object
	// that no Set ever gives to a value is removed so too.
	NewObj(db int, key []byte) (uint64, error)
	// Elem reads element sub of obj; callers must not modify it.
	Elem(obj uint64, sub []byte) ([]byte, bool, error)
	// SetElem stores element sub of obj; it keeps neither sub nor val.
	SetElem(obj uint64, sub, val []byte) error
	// DeleteElem removes element sub of obj, reporting whether it was
	// there.
	DeleteElem(obj uint64, sub []byte) (bool, error)
	// DropElem removes element sub of obj, there or not: DeleteElem
	// without the read, for a caller that knows it is there.
	DropElem(obj uint64, sub []byte) error
	// ScanElems calls fn for each element of obj whose sub is >= from,
	// in byte order of sub, until fn returns false or an error. The
	// slices are valid only during the call; fn must not call the
	// transaction (gather, then read or write).
	ScanElems(obj uint64, from []byte, fn func(sub, val []byte) (bool, error)) error
	// ScanElemsRev is ScanElems in descending byte order of sub, from
	// the last element whose sub is < before (nil: the last element).
	ScanElemsRev(obj uint64, before []byte, fn func(sub, val []byte) (bool, error)) error
}

// DBSwapper is implemented by a Tx that can swap two databases whole
// (SWAPDB) at once, whatever they hold: after SwapDBs(a, b), a holds what
// b held, deadlines and counts (Len, Expiring) included, and the other
// way round. It is a write of the transaction, as durable as the others.
// a == b changes nothing; an index out of range is ErrBadDB.
type DBSwapper interface {
	SwapDBs(a, b int) error
}

// Ticket tells when the writes of one Update are durable.
type Ticket interface {
	// Wait blocks until the writes are durable under the store's fsync
	// policy, or the store failed to make them so.
	Wait(ctx context.Context) error
}

// Notifier is implemented by a Ticket that can tell when its writes are
// durable instead of being waited for: Notify arranges for fn to be
// called once, on a goroutine of the store's, with nil when they are
// durable or with the error Wait would return. It reports false, and
// calls nothing, when the ticket is done already or the store cannot
// promise the call (closing, failing): Wait then. Notify may make the
// writes durable itself, in the caller's goroutine, and report false.
// fn must be quick and must not call the store: it runs in the loop that
// makes writes durable, or in another caller's Notify.
// A connection hands it the sending of its replies, so that its goroutine
// need not park until the fsync and be woken to send them.
type Notifier interface {
	Notify(fn func(err error)) bool
}

// Store is a keyspace of numbered databases.
type Store interface {
	// View runs fn with shared, read-only access. The ticket is nil when
	// fn read nothing that is not yet durable.
	View(fn func(tx Tx) error) (Ticket, error)
	// Update runs fn with exclusive access. The ticket is nil when fn wrote
	// nothing and read nothing that is not yet durable.
	Update(fn func(tx Tx) error) (Ticket, error)
	// Databases is the number of logical databases.
	Databases() int
	// Close stops background work, makes every write durable and closes
	// the storage.
	Close() error
}

// WriteChecker is implemented by a Store that can tell, without a
// transaction, whether it refuses writes now (a full disk): WriteErr is
// then the error an Update would fail with, wrapping ErrWrite; nil when it
// takes writes. A command queued in MULTI asks it, as Redis refuses a
// write as it is queued while it refuses writes.
type WriteChecker interface {
	WriteErr() error
}

// KindWalker is implemented by a Store that walks its whole keyspace once
// in the background after Start (the Badger store counts its keys so). A
// caller that must know some values stored before the store opened (the
// ONCE engine: its running records, which INFO counts) asks that walk for
// them rather than walking the keyspace again.
type KindWalker interface {
	// WalkKind calls fn with every value of kind k that the walk finds,
	// then done, with false when the walk was cut short (the store
	// closed). Each value is the key's value at some moment since Open,
	// not necessarily now, and may be past its deadline: the caller
	// checks it again in a transaction.
	// Called before Start, fn and done run on the walk's goroutine after
	// Start; called later, WalkKind walks a snapshot itself before it
	// returns. fn and done must be quick and must not call the store (the
	// walk may run for a caller that holds the store's lock); fn must not
	// keep key nor v.Data.
	WalkKind(k Kind, fn func(db int, key []byte, v Value), done func(complete bool))
}

// Holder is implemented by a Store whose lock one caller may keep across
// several transactions (a connection's pipeline), so that it is taken
// once for them all rather than once per command: each taking moves the
// lock's cache line between the cores that run commands.
type Holder interface {
	// Hold returns a Hold on the store; it takes nothing yet.
	Hold() Hold
}

// Prefetcher is implemented by a Store that can bring what reading some
// keys will touch into the processor's cache ahead of the reads: a
// connection with a pipeline of commands calls it with their keys before
// it runs them one by one, so that their cache misses overlap. It is
// advice: it changes nothing, and a key it does not know costs a lookup.
// It returns a sum of what it read, so that no read of it is left out as
// unused; a caller has no use for the sum.
type Prefetcher interface {
	Prefetch(db int, keys [][]byte) uintptr
}

// A Hold runs transactions under one taking of the store's lock: shared
// from a View, exclusive from an Update (a View then runs under it too),
// kept until Release, or until the store lets it go after a bounded
// number of transactions, so that others wait for few. It belongs to one
// goroutine, which, while the Hold may have the lock, must not wait for
// anything another transaction does (another client, a durability
// ticket), nor call the store other than through the Hold: it must
// Release first.
type Hold interface {
	View(fn func(tx Tx) error) (Ticket, error)
	Update(fn func(tx Tx) error) (Ticket, error)
	// Release lets the lock go, if the Hold has it; the Hold may be used
	// again after.
	Release()
}

// Done is a Ticket that is already durable.
type Done struct{}

// Wait returns at once.
func (Done) Wait(context.Context) error { return nil }

// Covers reports whether prev is a Done too, which a connection then
// awaits once (resp.Conn.Await).
func (Done) Covers(prev any) bool {
	_, ok := prev.(Done)
	return ok
}
