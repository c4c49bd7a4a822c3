// Package badgerdb is the embedded store: the keyspace on disk in Badger.
//
// Writes are staged in memory (dirty entries, which every read consults
// first). One logger goroutine gathers the staged writes of all
// connections and appends them to the store's own write-ahead log as one
// record per round (wal.go), with one fsync per round under "always"
// (group commit); a write is acknowledged once its record is written (and,
// under "always", synced), as Redis acknowledges after its AOF write. Under
// "everysec" a syncer syncs the log once a second; under "no" the operating
// system decides. An applier goroutine then writes the logged writes to
// Badger in batches, keeping the last write of each key, and segments of
// the log that Badger holds are deleted; Open replays what is left.
//
// Values of the keyspace are also kept in memory after they reach Badger,
// within a bounded cache of clean entries, and so are recent misses (keys
// known to be absent), so hot keys are read from memory; Badger is read
// only on a miss.
//
// A sweeper walks the time-ordered expiry index in bounded rounds and deletes
// expired keys, as Redis's active expire cycle does. The numbers of keys
// per database are counted in the background after Open (count.go), and
// that walk shows the values of a kind to whoever asked (WalkKind).
//
// The data directory carries a marker (oncekv.meta, dir.go): Open refuses a
// non-empty directory without it, and a Badger directory whose MANIFEST is
// missing or damaged, instead of starting empty over it. When the log or
// Badger cannot write, or the disk is down to its free-space reserve
// (space.go), writes are refused with store.ErrWrite until they succeed
// again; reads go on. Backup and Restore (backup.go) copy a consistent
// snapshot.
//
// What it does not do: keep the whole keyspace in memory (reads that miss
// go to Badger), or keep acknowledged writes across a power loss beyond
// the last sync under "everysec" (about one second) and "no".
package badgerdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/ristretto/v2/z"
	"github.com/tidwall/btree"
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/store"
)

// Fsync is the appendfsync policy.
type Fsync int

// The appendfsync policies, as Redis names them.
const (
	FsyncEverysec Fsync = iota
	FsyncAlways
	FsyncNo
)

// ParseFsync reads an appendfsync value.
func ParseFsync(s string) (Fsync, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverysec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("argument must be 'always', 'everysec' or 'no'")
}

func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// Options configure the store.
type Options struct {
	Dir       string
	Databases int
	Fsync     Fsync
	Logger    *zap.Logger
	// MemTableSize and BlockCacheSize size Badger's memory.
	MemTableSize   int64
	BlockCacheSize int64
	// SweepInterval is how often the expiry sweeper runs (Redis: hz 10).
	SweepInterval time.Duration
	// SweepKeys is the most keys the sweeper deletes under one lock.
	SweepKeys int
	// GCInterval is how often Badger's value log is garbage collected.
	GCInterval time.Duration
	// TrimInterval is how often the pages of Badger's table mappings are
	// handed back to the page cache (trim_linux.go), unless reads of the
	// tables stream in (trimQuietReads), and the arenas its table
	// builders left over released (builders.go); 0 never.
	TrimInterval time.Duration
	// Compression is how the tables Badger writes from now on are
	// compressed: "none" (also ""), "snappy" or "zstd". Each table
	// records its own, so a store opened with another reads its old
	// tables as they are. None is the default: a read then uses the
	// block in the table's memory map, where a compressed table's is
	// decompressed into a new buffer on every block-cache miss; measured
	// with 2M keys of 100 incompressible bytes, GETs over a keyspace
	// larger than the caches +17-85% (P1) and +37-43% (P16), loading
	// +40%, for 10% more disk.
	Compression string
	// MaxPending and MaxPendingBytes are how many keys, and how many
	// bytes of keys and values, may hold writes that Badger does not have
	// yet before writers wait (back-pressure): they bound the memory of
	// the write-back, where rewrites of a waiting key count once. Half
	// of either starts an apply at once (earlyApply). MaxPendingBytes 0 is
	// DefaultMaxPendingBytes(CacheSize).
	MaxPending      int
	MaxPendingBytes int64
	// ApplyDelay is how long logged writes gather before they are applied
	// to Badger in one batch (see gather), counted in the time the process
	// runs (calmWatch.ran) when CalmApply is set; 0 applies each log round
	// at once. Half of the pending bounds (earlyApply), a full log
	// segment, writers held back by those bounds, a reader that needs
	// Badger up to date (FLUSHDB, a backup: drain), or a calm server
	// (CalmApply) cut it short.
	ApplyDelay time.Duration
	// CalmApply cuts ApplyDelay short once the server has been calm for
	// that long: fewer than CalmActivity writes staged and moves of
	// Activity together (a health check or a slow poller does not make
	// a server busy). A busy server gathers its writes for the whole
	// ApplyDelay (or up to the pending bounds), so that Badger's work,
	// which the collapsed rewrites of a key shrink, does not compete with
	// the commands; a calm one applies them at once, when that work takes
	// nothing from anyone and the memory they hold is released. 0
	// disables it.
	CalmApply time.Duration
	// CalmActivity is the activity within one CalmApply from which the
	// server counts as busy; 0 means 1, any activity at all.
	CalmActivity int64
	// Activity, when set, counts the server's work besides the store's
	// writes (the commands it processed): a server busy with reads is
	// not calm either. It is called from the applier's goroutine.
	Activity func() int64
	// WALSegmentSize is the size after which the write-ahead log moves
	// to a new segment (wal.go); 0 is 256 MiB.
	WALSegmentSize int64
	// CacheSize bounds, in bytes, the cache of committed values; 0
	// disables it.
	CacheSize int64
	// Clock returns Unix milliseconds; nil means the wall clock.
	Clock func() int64
	// MinFreeDisk is the free space, in bytes, that the data directory's
	// filesystem must keep after a write: below it writes are refused
	// (store.ErrWrite) until space returns. Badger writes its logs and
	// tables through memory maps, where a full disk is not an error but a
	// crash (SIGBUS), so the store must stop before the disk is full. 0
	// means DefaultMinFreeDisk(MemTableSize); negative disables the check.
	MinFreeDisk int64
}

// DefaultMinFreeDisk is the free-space reserve for a memtable size: room
// for the memtable logs and the flushes and compactions Badger still runs
// after writes stop, all written through memory maps, where a full disk
// is a crash. Sixteen memtables: a level-0 compaction alone reads
// levelZeroTables tables of a memtable each and writes as much before it
// deletes them, and up to four memtables (three immutable, one active)
// wait to be flushed. The 64 MiB floor was sixteen of the 4 MiB
// memtables that were the default until 16 MiB; eight of 16 MiB would
// have left half that margin.
func DefaultMinFreeDisk(memTableSize int64) int64 {
	return max(64<<20, 16*memTableSize)
}

// DefaultMaxPendingBytes is the bound on the writes waiting for Badger
// (Options.MaxPendingBytes) for a value cache size: as much, at least
// 64 MiB. (It was twice the cache. With a 64 MiB cache, that let 128 MiB
// of writes wait, and the RSS 5 s after loading 10M keys at -P 16 was
// 281 MiB, against 201 with 64 MiB waiting: bench/harness -s memory.)
func DefaultMaxPendingBytes(cacheSize int64) int64 {
	return max(cacheSize, 64<<20)
}

// DefaultOptions are the options of a server started with no configuration.
func DefaultOptions(dir string) Options {
	return Options{
		Dir:            dir,
		Databases:      16,
		Fsync:          FsyncEverysec,
		Logger:         zap.NewNop(),
		MemTableSize:   16 << 20,
		BlockCacheSize: 32 << 20,
		SweepInterval:  100 * time.Millisecond,
		SweepKeys:      64,
		GCInterval:     5 * time.Minute,
		TrimInterval:   time.Second,
		MaxPending:     1 << 20,
		ApplyDelay:     30 * time.Second,
		CalmApply:      200 * time.Millisecond,
		CalmActivity:   100, // 500 commands or writes a second
		CacheSize:      48 << 20,
	}
}

// entry is what memory holds of one Badger key: a staged write that the
// committer has not written yet (n > 0, "dirty"), or a clean copy of what
// Badger holds (n == 0): its value, or, with del, the knowledge that the key
// is absent. Reads look up one map for both; only clean entries of the
// keyspace are kept after their commit, within the cache budget.
type entry struct {
	key string
	val []byte // nil with del
	del bool
	// head is the value's header, read where the value is set (stage,
	// the cache fill), where its bytes are in the cache anyway: a write
	// that replaces a value with no deadline (SET, DEL) then decides
	// without reading the old value's bytes, a cache miss that was 6% of
	// a pipelined SET's CPU. It fits in the padding after del.
	head valHead
	// queued is the entry's place in the applier's queue, under applyMu
	// (queueLocked): valid while applyQ[queued].e is this entry. It fits
	// in the padding after del too, so an entry stays 64 bytes.
	queued uint32
	n      uint64 // the staged op that wrote it; 0 when clean
	// seq is, while the entry is clean, its latest place in the clean
	// queue (cache.go), and while it is dirty its index in dirty
	// (makeDirty): the queue's check of a place needs the entry clean
	// anyway (queuedLive), and cleaning it queues it anew.
	seq uint64
}

// valHead is what a value's header says, without its deadline's value.
type valHead struct {
	ok       bool       // the value has a header (it is a data key's)
	kind     store.Kind // with objFlag when the value owns an object
	noExpiry bool       // its deadline is 0
}

// headOf reads val's header.
func headOf(val []byte) valHead {
	if len(val) < headerLen {
		return valHead{}
	}
	return valHead{ok: true, kind: store.Kind(val[0]), noExpiry: binary.BigEndian.Uint64(val[1:]) == 0}
}

// newEntry returns an entry for key that holds the key's bytes in its own
// allocation when they are short (up to 128 bytes, in sizes that fill
// the allocator's size classes): one object where a separate key made
// two. Every collection marks each object memory holds, and with ONCE
// answers expiring in numbers (hundreds of thousands of dirty entries
// waiting for their apply) the marking took a quarter of the server's
// CPU, much of it looking up each object's span. (For reads it changes
// nothing measurable: the map's slot holds both pointers, so the two
// misses overlap; docs/performance-notes.md.)
func newEntry(key []byte) *entry {
	for _, k := range keyedSizes {
		if len(key) <= k.room {
			return k.alloc(key)
		}
	}
	return &entry{key: string(key)}
}

// keyedSizes are the rooms for a key that newEntry chooses from, smallest
// first: with the entry's 64 bytes, each fills a size class (80 to 192).
var keyedSizes = [...]struct {
	room  int
	alloc func([]byte) *entry
}{
	{16, newKeyed[[16]byte]}, {32, newKeyed[[32]byte]}, {48, newKeyed[[48]byte]},
	{64, newKeyed[[64]byte]}, {80, newKeyed[[80]byte]}, {96, newKeyed[[96]byte]},
	{112, newKeyed[[112]byte]}, {128, newKeyed[[128]byte]},
}

// keyed is an entry followed by room B (a byte array) for its key.
type keyed[B any] struct {
	entry
	b B
}

// newKeyed allocates a keyed entry with room B for key, which must fit.
func newKeyed[B any](key []byte) *entry {
	x := new(keyed[B])
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&x.b)), unsafe.Sizeof(x.b))
	return x.own(buf, key)
}

// own copies key into buf, memory of e's own allocation that nothing
// writes again, and makes it e's key.
func (e *entry) own(buf, key []byte) *entry {
	copy(buf, key)
	e.key = unsafe.String(unsafe.SliceData(buf), len(key))
	return e
}

type op struct {
	key string
	// e is the entry in memory that the op was staged into, which stays
	// there, dirty, until the op is applied (nil for replayed ops, which
	// skip the queue).
	e   *entry
	val []byte
	del bool
	// absent reports that Badger does not hold key before this op, once
	// every earlier op is applied: the key was absent just before it. A
	// deletion that is absent writes nothing to Badger (write); in the
	// applier's queue, an op that replaces a key's waiting one keeps the
	// waiting one's absent (queueLocked), so a key put and deleted within
	// one round costs Badger nothing, where it would leave a tombstone.
	absent bool
	n      uint64
}

// DB is the Badger-backed store.
type DB struct {
	opts Options
	bdb  *badger.DB
	// dbMap is SWAPDB's table of databases (dbmap.go); nil: the identity.
	dbMap atomic.Pointer[dbMap]
	// format is the format the directory's marker names (under mu once
	// Open returned): formatSwapTable once a SWAPDB raised it.
	format int
	// builders is Badger's pool of table builders' arenas, which trim
	// empties (builders.go); nil if not found.
	builders *z.AllocatorPool
	log      *zap.Logger
	now      func() int64

	// mu is the keyspace lock: Update holds it exclusively, View shared.
	// counts and expiring are the changes, under mu, to the numbers of
	// keys and of keys with a deadline per database since Open; base and
	// baseExp are those numbers at Open, counted in the background on a
	// snapshot (count.go) and valid once counted is closed.
	mu       sync.RWMutex
	counts   []int
	expiring []int
	base     []int
	baseExp  []int
	counted  chan struct{}
	countTxn *badger.Txn
	counting sync.Once
	// walks are the WalkKind callers that the count shows its values
	// to; walkBegun is set when it takes them (both under walkMu).
	walkMu    sync.Mutex
	walks     []kindWalk
	walkBegun bool
	// nextSweep is, per database and under mu, the earliest deadline
	// that the expiry index may hold (Unix ms): the first one the last
	// sweep left, lowered by every deadline set since. Before it, the
	// sweeper does not scan the index, and a scan starts at its place
	// in the index rather than at the index's start: below it lie the
	// entries swept so far, as tombstones until Badger compacts them
	// away, which every scan from the start stepped over again.
	nextSweep []int64
	// sweepFrom is, per database and under mu, the expiry index entry
	// where the last sweep round stopped while more expired keys waited
	// (nil: start at nextSweep); setSince is the earliest deadline set
	// since the round that started at nextSweep began its scan
	// (MaxInt64: none).
	sweepFrom [][]byte
	setSince  []int64
	// sweepSteps counts the overlay entries the sweeper's scans stepped
	// over, deleted ones included (for tests).
	sweepSteps int
	// sweepScans counts the sweeper's scans of the index (for tests).
	sweepScans int
	// sweptUnread counts the keys the sweeper deleted without reading
	// them (sweepLater; for tests).
	sweptUnread int
	// checkUpTo is the last deadline whose expiry index entries may be
	// stale (exactIndex).
	checkUpTo int64
	// logWrites counts the log records written (INFO, tests), and
	// ledWrites those of them a writer wrote itself (lead).
	logWrites atomic.Uint64
	ledWrites atomic.Uint64
	// skippedDeletes counts the deletions that write left out, of keys
	// Badger did not hold (the applier's; for tests).
	skippedDeletes atomic.Int64
	// noSkip turns that off for good once a round of ops was lost or a
	// failed batch requeued: memory's account of what Badger holds,
	// which op.absent comes from, may then be wrong.
	noSkip atomic.Bool

	// omu guards the entries in memory, the staged batch and their
	// counters; the committer takes only omu, never mu.
	omu sync.RWMutex
	// mem holds every dirty entry and the cached clean ones; dirty
	// lists the dirty ones (the overlay that scans merge), each at its
	// seq, in no order: nothing looks a key up in it, so a slice serves,
	// where a map cost two hash lookups a write. They are also indexed
	// in key order (ordered.go): those of the keyspace in keyOrder while
	// scans run, the others (the expiry index, which the sweeper scans)
	// always, in auxOrder.
	mem   entryTable
	dirty []*entry
	// memPeak and dirtyPeak are the most entries mem and dirty held
	// since they were last rebuilt (shrinkMapsLocked); shrinks counts
	// the rebuilds (for tests); trimStaged is staged at the last trim,
	// which rebuilds them only if nothing was staged since.
	memPeak, dirtyPeak int
	shrinks            int
	trimStaged         uint64
	// release hands the heap's free memory back to the kernel after a
	// rebuild, or when a quiet server's heap holds much it could hand
	// back (debug.FreeOSMemory; tests count the calls). heapSpare reads
	// what it could, and the live heap (heapSpareBytes; tests replace
	// it).
	release      func()
	heapSpare    func() (spare, live int64)
	trimActivity int64 // Activity at the last trim
	keyOrder     *btree.Map[string, *entry]
	auxOrder     btree.Map[string, *entry]
	lastScan     atomic.Int64 // when a scan last used keyOrder (Unix ns)
	batch        []op
	// spareBatch is the slice of the batch the logger wrote last, cleared,
	// for the next one: grown anew each round, the batch was a quarter
	// of the bytes allocated under a load of small writes.
	spareBatch []op
	staged     uint64
	// txDone is the number of the last op of the latest transaction to
	// end (endTx): the logger writes no op past it, so a log record
	// never holds part of a transaction, and a crash, which can lose the
	// log's last records, loses whole transactions (RENAME's deletion
	// without its write, EXEC's first commands without the rest, a key's
	// new deadline without its expiry index entry). Transactions that
	// write hold mu exclusively, so they end in the order they staged.
	// drain is the exception: FLUSHDB drops keys in Badger directly, so
	// what its transaction (an EXEC) staged before it is logged then.
	txDone     atomic.Uint64
	cacheBytes int64 // the cost of mem's clean entries
	// clean is the order in which mem's clean entries leave it (cache.go).
	clean      cleanQueue
	dirtyBytes int64 // the cost of the dirty ones
	// snap is a read-only Badger transaction that point reads share
	// (readBadger), replaced after each apply; snapMu guards it, held
	// shared while a read uses it.
	snapMu sync.RWMutex
	snap   *badger.Txn
	// snapGen counts the snapshots installed; it changes, under snapMu,
	// whenever snap does (sweepLater).
	snapGen atomic.Uint64
	// ownReads counts the point reads that had no snapshot (for tests).
	ownReads atomic.Int64
	// calmApplies counts the apply rounds that a calm server started
	// before ApplyDelay (gather; for tests).
	calmApplies atomic.Int64
	// ranApplies counts those that ApplyDelay started, counted in the
	// time the process ran (gather).
	ranApplies atomic.Int64
	// pres is the presence filter of the keys Badger holds (presence.go);
	// nextPres, under omu, the one being built to replace it, which
	// stage adds to as well; presMin the smallest filter, in keys.
	pres        atomic.Pointer[presence]
	nextPres    *presence
	presMin     int64
	rebuildPres chan struct{}
	// lookups counts the point reads that went to Badger, and presSkips
	// the ones the presence filter spared.
	lookups   atomic.Int64
	presSkips atomic.Int64
	// replayed is what Open's replay of the log did (tests read it).
	replayed replayStats
	// presHook, if set, runs while a rebuild holds its snapshot (tests).
	presHook func()
	// sweepHook, if set, runs between a sweep's reads outside the
	// keyspace lock and its deletions under it (tests); scanHook, if set,
	// between a round's scan of the expiry index and its settling.
	sweepHook func()
	scanHook  func()
	// expiryPaused stops the sweeper while set (PauseExpiry).
	expiryPaused atomic.Bool
	// sweeping serializes sweep rounds, whose scans run without mu and
	// whose cursor (nextSweep, sweepFrom, setSince) assumes one at a time.
	sweeping sync.Mutex
	scratch  sweepScratch // under sweeping
	// cleanMu is held shared by scans, which read the overlay as they go,
	// and exclusively by the applier while it makes entries clean: an
	// entry in the overlay when a scan starts stays there until it ends.
	cleanMu sync.RWMutex

	// Op numbers reached: logged (written to the log, wal.go), committed
	// (applied to Badger), synced (on stable storage).
	logged    atomic.Uint64
	committed atomic.Uint64
	synced    atomic.Uint64
	wal       *wal
	// applyMu guards the writes the logger has logged and hands to the
	// applier, and the log segments waiting for a checkpoint.
	applyMu sync.Mutex
	// applyQ holds one op per key (queueLocked): a key's later write
	// replaces its earlier one in place, so each key costs Badger one
	// write a round.
	applyQ []op
	spareQ []op // an applied round's queue, for the next round
	// queueHint is the last round's size: a queue that outgrows the
	// size of a kept one grows to that size at once (queueLocked), not
	// by doubling from there.
	queueHint int
	// farRewrites counts the rewrites queued since the applier last took
	// the queue whose key was first queued in the older half of the
	// queue: with len(applyQ), how much gathering collapses
	// (collapsingLocked).
	farRewrites int
	applyHi     uint64
	// applyPos is where the log ends after the record of op applyHi,
	// and applyWritten how many bytes it had taken since it was opened
	// (wal.total) then.
	applyPos     walPos
	applyWritten int64
	// roundWritten is applyWritten when the applier last took the
	// queue: the log written since is what a crash would replay (with
	// what came before the last recorded position, which is recorded at
	// most once a second). Once it reaches a segment's size, an apply
	// starts at once; so the replay stays about a segment, and the log
	// on disk about two (the segment where the last apply's writes end
	// is kept until the next apply), plus what is logged while an apply
	// runs. A full segment alone does not start one: right after an
	// apply, it rewrote every key dirtied since, for nothing the bounds
	// needed (issue 6).
	roundWritten int64
	segsDone     []segEnd
	// posSynced is when the applier last synced Badger to record the
	// log position it holds (recordPosition).
	posSynced time.Time
	// memSynced are the fids of Badger's immutable memtable files that
	// syncBadger fsynced; dirSynced the names of Badger's .mem and .vlog
	// files there when syncBadger last fsynced its directory (under memMu).
	memMu     sync.Mutex
	memSynced map[uint64]bool
	dirSynced map[string]bool
	applyKick chan struct{}
	roundMu   sync.Mutex // commitRound's, for a store that was not started
	// applyNow asks the applier to apply at once, without gathering.
	applyNow chan struct{}
	// drainTo is the highest op that a drain waits to see applied: until
	// then the applier does not gather.
	drainTo atomic.Uint64
	// progLog and progApply are closed and replaced whenever the logger
	// (logged, synced) or the applier (committed) makes progress, and on
	// a failure: two, so that an apply does not wake the writers waiting
	// for the log, nor a log round those waiting for an apply.
	progMu    sync.Mutex
	progLog   chan struct{}
	progApply chan struct{}
	// notices are the calls tickets promised (ticket.Notify), made by
	// whichever loop raises their counter (notifyDue); noticesShut is
	// set once Close made the last of them, and no more are taken.
	nmu          sync.Mutex
	notices      []notice
	spareNotices []notice
	noticesShut  bool
	// held counts the writers waiting in backPressure.
	held    atomic.Int64
	failure atomic.Pointer[error]
	syncErr atomic.Pointer[error] // the last everysec fsync failed
	expired atomic.Int64

	// writeHook, when set (by tests), runs before each Badger write; an
	// error fails the write as a full disk would.
	writeHook func([]op) error
	// applyHook, when set (by tests), runs before each Badger apply, with
	// its ops.
	applyHook func([]op)
	// kickHook, when set (by tests), runs each time the logger is
	// kicked, before its round.
	kickHook func()
	// applyErr, when set (by tests), fails Badger applies as a broken
	// disk would.
	applyErr func() error
	// dropErr, when set (by tests), fails a flush's DropPrefix as a
	// broken disk would; endErr the deletion of its record.
	dropErr, endErr func() error
	// paceSleep, when set (by tests), stands in for each step of the
	// applier's rests (pace.go); paceRests counts the rests.
	paceSleep func(time.Duration)
	paceRests atomic.Int64
	space     spaceState
	// minFree is the free-space reserve in force (min-free-disk), which
	// SetMinFreeDisk changes while the store runs.
	minFree atomic.Int64

	// trims counts the periodic trims, and trimsWaited those that left
	// the table mappings alone because reads were streaming in (for
	// tests). trimReads is lookups at the last trim, and trimQuiet the
	// most lookups between two trims that let a trim unmap the tables
	// (trimQuietReads a second); both are the trim goroutine's.
	trims       atomic.Int64
	trimsWaited atomic.Int64
	trimReads   int64
	// trimTicks tells which trims may judge their interval; trimsLate
	// and trimsEarly count the trims skipped because they came late, or
	// too soon after a late one (calmWatch).
	trimTicks  tickJudge
	trimsLate  atomic.Int64
	trimsEarly atomic.Int64
	// tableReads counts the Badger iterators the store opened and its
	// value-log collections: reads of the tables that lookups does not
	// count. trimmedMaps, trimmedReads and trimmedFile are the tables'
	// mappings, lookups + tableReads and the process's resident file
	// pages after the last trim of the tables, and trimsIdle counts the
	// trims skipped because none of them changed since (the trim
	// goroutine's; trim_linux.go).
	tableReads   atomic.Uint64
	trimmedMaps  string
	trimmedReads uint64
	trimmedFile  int64
	trimsIdle    atomic.Int64
	trimQuiet    int64
	// realDir is Dir with symbolic links resolved, as /proc/self/maps
	// names the table files (trim_linux.go).
	realDir string

	kick chan struct{}
	// logMu is held through each log round, which the logger writes, or
	// a writer that finds none under way (lead), or Close.
	logMu sync.Mutex
	stop  chan struct{}
	// group is the logger's state for grouping commits under "always"
	// (group.go); only the logger goroutine uses it.
	group groupState
	wg    sync.WaitGroup
	// committers are the log, apply and sync loops (also in wg): they
	// never take mu, so a caller holding mu may wait for them (waitFor),
	// where waiting for wg could wait for a sweep or a filter rebuild
	// that waits for mu.
	committers sync.WaitGroup
	started    bool
	closed     atomic.Bool

	// nextObj is the last object number given (NewObj), under mu;
	// objDue says that some object may have no owner left (elems.go).
	nextObj uint64
	objDue  atomic.Bool
}

var (
	_ store.Store        = (*DB)(nil)
	_ store.WriteChecker = (*DB)(nil)
	_ store.KindWalker   = (*DB)(nil)
)

// Open opens (creating if needed) the data directory and counts its keys.
// It starts no goroutine: call Start.
func Open(opts Options) (*DB, error) {
	if opts.Databases < 1 || opts.Databases > 1<<16 {
		return nil, fmt.Errorf("open store: databases must be 1..65536")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if _, ok := compressions[opts.Compression]; !ok {
		return nil, fmt.Errorf("open store: compression must be none, snappy or zstd, not %q", opts.Compression)
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 1 << 20
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes(opts.CacheSize)
	}
	if opts.WALSegmentSize <= 0 {
		opts.WALSegmentSize = walSegmentSize
	}
	if opts.SweepKeys <= 0 {
		opts.SweepKeys = 64
	}
	if opts.MinFreeDisk == 0 {
		opts.MinFreeDisk = DefaultMinFreeDisk(opts.MemTableSize)
	}
	if testGCInterval > 0 {
		opts.GCInterval = testGCInterval
	}
	fresh, format, err := checkDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if fresh {
		// Mark the directory before Badger writes anything into it, so
		// that a crash right after leaves a directory that opens.
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("open store: create data dir: %w", err)
		}
		if err := writeMarker(opts.Dir, format); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	if !fresh {
		removed, err := removeEmptyLogs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("open store: remove the empty logs a crash left: %w", err)
		}
		if len(removed) > 0 {
			opts.Logger.Warn("removed the empty Badger logs a crash left", zap.Strings("files", removed))
		}
	}
	bdb, err := badger.Open(badgerOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("open store in %s: %w", opts.Dir, err)
	}
	// Checked once Badger holds the directory's lock: another store
	// that has it open keeps its own RunningFile.
	crashed := lostPower(opts.Dir)
	s := &DB{
		opts:        opts,
		bdb:         bdb,
		builders:    poolOf(bdb),
		log:         opts.Logger,
		now:         opts.Clock,
		counts:      make([]int, opts.Databases),
		expiring:    make([]int, opts.Databases),
		base:        make([]int, opts.Databases),
		baseExp:     make([]int, opts.Databases),
		nextSweep:   make([]int64, opts.Databases),
		sweepFrom:   make([][]byte, opts.Databases),
		setSince:    make([]int64, opts.Databases),
		counted:     make(chan struct{}),
		mem:         newEntryTable(),
		release:     debug.FreeOSMemory,
		heapSpare:   heapSpareBytes,
		progLog:     make(chan struct{}),
		progApply:   make(chan struct{}),
		applyNow:    make(chan struct{}, 1),
		kick:        make(chan struct{}, 1),
		presMin:     presenceMinKeys,
		rebuildPres: make(chan struct{}, 1),
		applyKick:   make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	if s.now == nil {
		s.now = func() int64 { return time.Now().UnixMilli() }
	}
	for db := range s.setSince {
		s.setSince[db] = math.MaxInt64 // no deadline set yet
	}
	s.realDir = opts.Dir
	if abs, err := filepath.Abs(opts.Dir); err == nil {
		s.realDir = abs
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			s.realDir = real
		}
	}
	s.warnThinReserve(opts.MinFreeDisk)
	s.minFree.Store(opts.MinFreeDisk)
	if err := s.recoverWAL(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	// After the replay, though the log holds nothing the flush must drop
	// (it began with checkpointAll): should it, the flush drops it too.
	if err := s.finishFlush(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	hasTable, err := s.loadDBMap()
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.loadObjSeq(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.loadSweepCheck(format == formatStaleIndex, crashed); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store: expiry index: %w", err)
	}
	// Format 1 is raised to 2; format 3 stays (it is never lowered). A
	// SWAPDB table under a format-2 marker is not written by this build
	// (raiseFormat), but is raised to 3 all the same.
	want := max(format, formatPlain)
	if hasTable {
		want = max(want, formatSwapTable)
	}
	if s.nextObj > 0 {
		want = max(want, formatObjects)
	}
	if format != want {
		if err := writeMarker(opts.Dir, want); err != nil {
			bdb.Close()
			return nil, fmt.Errorf("open store: upgrade format: %w", err)
		}
	}
	s.format = want
	if err := markRunning(opts.Dir); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	// The snapshot that the keys are counted on: nothing is written
	// before Open returns, so it is the keyspace at Open.
	s.countTxn = bdb.NewTransaction(false)
	s.pres.Store(newPresence(tableKeys(bdb), s.presMin))
	if limit, ok := openFileLimit(); ok {
		if w := openFilesWarning(len(bdb.Tables()), limit, bdb.Opts().BaseTableSize); w != "" {
			s.log.Warn(w)
		}
	}
	return s, nil
}

// compressions are the Badger compressions Options.Compression names.
var compressions = map[string]options.CompressionType{
	"": options.None, "none": options.None, "snappy": options.Snappy, "zstd": options.ZSTD,
}

// badgerOptions are the Badger options of a store, whose Compression is
// one of compressions.
func badgerOptions(opts Options) badger.Options {
	bopts := badger.DefaultOptions(opts.Dir).
		WithSyncWrites(false).
		WithLogger(badgerLogger{opts.Logger.Sugar()}).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false).
		WithNumCompactors(2).
		WithNumMemtables(3).
		WithValueLogFileSize(valueLogFileSize).
		WithCompression(compressions[opts.Compression]).
		WithNumLevelZeroTables(levelZeroTables).
		WithNumLevelZeroTablesStall(levelZeroStall).
		WithBlockCacheSize(blockCacheSize(opts)).
		// Badger's expvar counters (reads, writes, bytes per level) are
		// published nowhere here, and counting them took 4% of the CPU
		// of GETs that miss memory.
		WithMetricsEnabled(false)
	bopts.TableSizeMultiplier = tableSizeMultiplier
	if opts.MemTableSize > 0 {
		bopts = bopts.WithMemTableSize(opts.MemTableSize).
			WithValueThreshold(valueThreshold(opts.MemTableSize))
	}
	return bopts
}

// Badger compacts level 0 into level 1 once levelZeroTables tables wait
// there (its default: 5), and holds its writes (the applier's) once
// levelZeroStall do (its default: 15). With 4 MiB memtables and values
// rewritten over a keyspace (redis-benchmark -r 100000), each compaction
// rewrites most of level 1, so fewer, larger ones write less. SET -d 256
// -P 16 took 14-20% less server CPU per request with 8 than with 5, and 12
// about as much (20-25%); a reading of RSS 5 s after loading 1M keys was 123 MiB
// with 8, 108-111 with 5 and 155-165 with 12, the compaction of a load
// being larger and later (issue 6). Reads that miss memory check a few
// more level-0 tables' Bloom filters. That was with 4 MiB memtables. With
// 16 MiB ones (level 0 then holds 128 MiB before it is compacted), two
// alternations of 5, 8 and 12, each a fresh server (SET -d 256 -P 16 over
// 100k keys, then 1M new keys with EX 20 left to expire): server CPU per
// SET 3.81 and 3.65 µs with 5, 3.57 and 3.58 with 8, 4.00 and 4.01 with
// 12; per expired key 19.2 and 16.9, 14.3 and 16.6, 15.4 and 13.9 µs; RSS
// 5 s after the 1M keys 226 and 282, 295 and 279, 146 and 161 MiB. 8
// stays: the cheapest writes, and no worse at expiring.
const (
	levelZeroTables = 8
	levelZeroStall  = 18
)

// tableSizeMultiplier is how much larger Badger makes the tables of each
// level below its base level (its default: 2). A table is built whole in
// memory, in an arena that starts at twice its size, and a compaction
// runs up to five builders at once, each handing its finished tables to
// writers: the deeper the tables, the more heap a compaction holds. With
// 10M keys (1.5 GB of tables) the last level's tables are 16 MiB, and
// heap profiles every 3 s of a 10M-key load (bench/harness -s memory)
// found the builders' arenas at up to 116 MB, typically 40-76 while
// compacting; a reading of RSS that fell during such a compaction was
// 233-237 MiB, against 150-200 otherwise. With every level's tables at
// the base size (2 MiB), the arenas held 28 MB at most, 16-20 typically,
// and the load took as long. The price is files: one per 2 MiB of
// tables (616 with 10M keys), each open while the table lives; Go raises
// the soft limit of open files to the hard one at start.
const tableSizeMultiplier = 1

// valueLogFileSize is the size of Badger's value log files, which is also
// the longest value it takes (store.MaxValueLen and the value's header). A
// variable for the tests of the replay's limit, which are cheaper with
// Badger's smallest (1 MiB).
var valueLogFileSize int64 = store.MaxValueLen + headerLen

// badgerMaxKey is the longest key Badger takes, in bytes.
const badgerMaxKey = 65000

// refused reports whether Badger refuses a replayed write of key and val,
// with an error in the log: writes of keys over badgerMaxKey, or of values
// over valueLogFileSize, which servers before store.MaxKeyLen and
// store.MaxValueLen logged and could not apply (the replay of such a log
// failed at every start). Badger never held them: the key keeps what it
// held before.
func (s *DB) refused(key, val []byte) bool {
	switch {
	case len(key) > badgerMaxKey:
		s.log.Error("log replay: dropped a write of a key longer than Badger takes (written before keys were limited to 64,989 bytes)",
			zap.Int("bytes", len(key)), zap.ByteString("key_start", key[:32]))
		return true
	case int64(len(val)) > valueLogFileSize:
		s.log.Error("log replay: dropped a write of a value longer than Badger takes (written before values were limited to 67,108,855 bytes)",
			zap.Int("bytes", len(val)), zap.ByteString("key", key[:min(len(key), 64)]))
		return true
	}
	return false
}

// valueThreshold is the size from which Badger keeps a value in its value
// log rather than in its tables, for a memtable size: its default, 1 MiB,
// unless an entry with a value just under it and the longest key would not
// fit in the 15% of a memtable that Badger writes in one batch. Such an
// entry fails every batch (the applier would retry it for good, and the
// log's replay at the next start would fail on it), and Badger refuses to
// open with a threshold over the batch size: the default alone needs
// memtables of 6.7 MiB, and with the longest keys, 7.1 MiB.
func valueThreshold(memTableSize int64) int64 {
	// Badger counts an entry kept in its tables as its key, its value,
	// 2 bytes of metadata and 10 of version, and starts each batch with
	// the 21 of its commit marker ("!badger!txn" and a version); a batch
	// must stay under its size. Keys reach 65,000 bytes
	// (store.MaxKeyLen, with 11 bytes of prefix).
	const longestEntry = badgerMaxKey + 2 + 10 + 11 + 10
	return min(1<<20, 15*memTableSize/100-longestEntry)
}

// Start launches the committer, the syncer, the sweeper and value-log GC.
func (s *DB) Start() {
	if s.started {
		return
	}
	s.started = true
	// The read snapshot is there from the start: nothing writes to Badger
	// yet, so taking it waits for nothing, and until the first apply
	// reads would otherwise open a transaction each, which waits for
	// that apply's commits (readBadger). A fresh server's first round is
	// its largest.
	s.refreshSnap()
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.countKeys()
	}()
	s.committers.Add(2)
	go s.logLoop()
	go s.applyLoop()
	s.wg.Add(1)
	go s.presenceLoop()
	if s.opts.Fsync == FsyncAlways {
		// Only there: under "everysec" one sync a second gains little,
		// and the zeros' writes cost pipelined writes 5-15% (walzero.go).
		s.wal.zeroOn()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.wal.zeroLoop(s.stop)
		}()
	}
	if s.opts.Fsync == FsyncEverysec {
		s.wg.Add(1)
		s.committers.Add(1)
		go s.syncLoop()
	}
	if s.opts.SweepInterval > 0 {
		s.every(s.opts.SweepInterval, func(time.Time) bool { s.Sweep(sweepBudget); return true })
	}
	if s.opts.SweepInterval > 0 {
		s.every(s.opts.SweepInterval, func(time.Time) bool { return s.collectObjects() })
	}
	if s.opts.GCInterval > 0 {
		s.every(s.opts.GCInterval, func(time.Time) bool { return s.collectValueLog() })
	}
	if s.opts.TrimInterval > 0 {
		s.trimQuiet = int64(trimQuietReads * s.opts.TrimInterval.Seconds())
		s.trimReads = s.lookups.Load()
		s.trimActivity = s.Activity()
		s.trimTicks = tickJudge{every: s.opts.TrimInterval}
		s.trimTicks.start(time.Now())
		s.every(s.opts.TrimInterval, s.trimTick)
	}
}

// Close drains staged writes, syncs and closes Badger.
func (s *DB) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	s.wg.Wait()
	s.countKeys() // a no-op if done; else it finds the store closing
	var errs []error
	// Log and apply what the loops left (everything, unless a write
	// failed).
	s.loggableAll()
	s.commitRound()
	s.shutNotices()
	if err := s.wal.sync(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	if err := s.syncBadger(); err != nil {
		errs = append(errs, fmt.Errorf("close store: sync: %w", err))
	} else if s.committed.Load() == s.logged.Load() {
		// Badger holds and has synced every logged write: the log
		// segments are not needed any more.
		if _, err := s.wal.rotate(); err == nil {
			s.wal.remove(^uint64(0))
		}
	}
	s.wal.close()
	s.swapSnap(nil)
	if err := s.closeBadger(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	if len(errs) == 0 {
		// Closed with everything synced: the next Open need not check
		// the expiry index for a crash's damage (loadSweepCheck).
		if err := os.Remove(filepath.Join(s.opts.Dir, RunningFile)); err == nil {
			syncDir(s.opts.Dir)
		}
	}
	return errors.Join(errs...)
}

// goneCheck is how often closeBadger checks that the data directory is
// still there.
const goneCheck = time.Second

// closeBadger closes Badger, unless the data directory is deleted
// meanwhile: Badger's flush of a memtable cannot create its table file
// then, and retries for good, so its Close would never return (nor would
// a server's shutdown). What it would have flushed had nowhere to go.
func (s *DB) closeBadger() error {
	done := make(chan error, 1)
	go func() { done <- s.bdb.Close() }()
	t := time.NewTicker(goneCheck)
	defer t.Stop()
	marker := filepath.Join(s.opts.Dir, MarkerFile)
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("the data directory %s was deleted: closed without flushing Badger's memtables", s.opts.Dir)
			}
		}
	}
}

// Databases is the number of logical databases.
func (s *DB) Databases() int { return s.opts.Databases }

// Fsync is the store's fsync policy.
func (s *DB) Fsync() Fsync { return s.opts.Fsync }

// Stats are figures for INFO.
type Stats struct {
	Pending   uint64
	Committed uint64
	Synced    uint64
	LSMSize   int64
	VlogSize  int64
	LastError error
	// Expired counts keys the sweeper deleted because their deadline
	// passed.
	Expired int64
	// Lookups counts the reads of keys that memory did not hold that
	// went to Badger, and LookupsSkipped the ones the key filter
	// (presence.go) answered; FilterBytes is the filter's size.
	Lookups        int64
	LookupsSkipped int64
	FilterBytes    int64
	// LogWrites counts the records written to the log, one per round of
	// writes from any number of clients, and LogSyncs its fsyncs: under
	// "always" the writes per fsync are how well commits are grouped.
	// LogWritesLed counts the records of LogWrites that a writer wrote
	// itself, no round being under way, rather than the logger (lead).
	LogWrites, LogSyncs, LogWritesLed uint64
}

// Stats reports the committer's progress and Badger's sizes.
func (s *DB) Stats() Stats {
	s.omu.RLock()
	staged := s.staged
	s.omu.RUnlock()
	lsm, vlog := s.bdb.Size()
	st := Stats{
		Committed: s.committed.Load(),
		Synced:    s.synced.Load(),
		LSMSize:   lsm,
		VlogSize:  vlog,
		Expired:   s.expired.Load(),

		Lookups:        s.lookups.Load(),
		LookupsSkipped: s.presSkips.Load(),
		FilterBytes:    s.pres.Load().bytes(),
		LogWrites:      s.logWrites.Load(),
		LogSyncs:       s.wal.syncs.Load(),
		LogWritesLed:   s.ledWrites.Load(),
	}
	st.Pending = staged - st.Committed
	st.LastError = s.writeError()
	return st
}

// View runs fn with shared access.
func (s *DB) View(fn func(tx store.Tx) error) (store.Ticket, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	t := s.newTx(false)
	err := s.viewLocked(t, fn)
	tk := s.ticketFor(t.readMax, false)
	freeTx(t)
	return tk, err
}

// holdMax is how many transactions a Hold runs under one taking of the
// lock: others wait for at most that many of its commands.
const holdMax = 16

// hold is DB's store.Hold.
type hold struct {
	s    *DB
	mode int // holdNone, holdShared or holdExclusive
	n    int // transactions since the lock was taken
}

const (
	holdNone = iota
	holdShared
	holdExclusive
)

// Hold returns a store.Hold on s.
func (s *DB) Hold() store.Hold { return &hold{s: s} }

// View runs fn with shared access, under the lock the hold keeps (the
// exclusive one, if it has that). A panic in fn leaves the lock held
// until Release.
func (h *hold) View(fn func(tx store.Tx) error) (store.Ticket, error) {
	s := h.s
	if s.closed.Load() {
		h.Release()
		return nil, store.ErrClosed
	}
	if h.mode == holdNone {
		s.mu.RLock()
		h.mode, h.n = holdShared, 0
	}
	t := s.newTx(false)
	err := fn(t)
	tk := s.ticketFor(t.readMax, false)
	freeTx(t)
	h.done()
	return tk, err
}

// Update runs fn with exclusive access, as DB.Update does, under the lock
// the hold keeps. Before it takes the lock, it waits as DB.Update does
// while Badger is too far behind (backPressure). A panic in fn leaves the lock
// held until Release; what fn staged is committed all the same.
func (h *hold) Update(fn func(tx store.Tx) error) (store.Ticket, error) {
	s := h.s
	if s.closed.Load() {
		h.Release()
		return nil, store.ErrClosed
	}
	if err := s.writeError(); err != nil {
		h.Release()
		return nil, fmt.Errorf("%w: %v", store.ErrWrite, err)
	}
	if h.mode != holdExclusive {
		// Back pressure is checked as the lock is taken: once for the
		// run of writes it serves, which adds at most holdMax to the
		// pending writes' bound.
		h.Release()
		s.backPressure()
		s.mu.Lock()
		h.mode, h.n = holdExclusive, 0
	}
	t := s.newTx(true)
	err := stagedRun(s, t, fn)
	tk := s.ticketFor(max(t.last, t.readMax), t.last != 0)
	freeTx(t)
	h.done()
	return tk, err
}

// stagedRun runs fn, then ends t (endTx), even when fn panics.
func stagedRun(s *DB, t *tx, fn func(store.Tx) error) error {
	defer s.endTx(t)
	return fn(t)
}

// done counts a transaction, and lets the lock go after holdMax.
func (h *hold) done() {
	if h.n++; h.n >= holdMax {
		h.Release()
	}
}

// Release lets the lock go, if the hold has it.
func (h *hold) Release() {
	switch h.mode {
	case holdShared:
		h.s.mu.RUnlock()
	case holdExclusive:
		h.s.mu.Unlock()
	}
	h.mode = holdNone
}

// txPool recycles transactions: one per command would otherwise be
// garbage the collector must find, hundreds of thousands a second.
var txPool = sync.Pool{New: func() any { return new(tx) }}

// newTx is a transaction of s, from txPool.
func (s *DB) newTx(write bool) *tx {
	t := txPool.Get().(*tx)
	*t = tx{s: s, write: write, key: t.key[:0], xkey: t.xkey[:0]}
	return t
}

// freeTx returns t to txPool once View or Update is done with it. A
// transaction must not be used after its function returns: it no longer
// holds the keyspace lock, and the pool hands it to the next command
// (cleared, it fails on first use only until then).
func freeTx(t *tx) {
	key, xkey := t.key, t.xkey
	if cap(key) > keyBufMax {
		key = nil // a long key's buffer is not worth keeping
	}
	if cap(xkey) > keyBufMax {
		xkey = nil
	}
	*t = tx{key: key, xkey: xkey}
	txPool.Put(t)
}

// ticketFor is the ticket of op n: nil when there is none (n == 0), or
// when it is durable already and wrote is false (what View promises); done
// when it is durable already and the transaction wrote. Under
// "always" it is done once the op's log record is synced, else once it is
// written to the log (in the kernel's hands, as Redis's AOF write is before
// its reply).
func (s *DB) ticketFor(n uint64, wrote bool) store.Ticket {
	if n == 0 || (!wrote && s.synced.Load() >= n) {
		return nil
	}
	if s.synced.Load() >= n {
		return store.Done{}
	}
	if s.opts.Fsync != FsyncAlways {
		if s.logged.Load() >= n {
			return store.Done{}
		}
		return ticket{s: s, n: n, c: &s.logged}
	}
	return ticket{s: s, n: n, c: &s.synced}
}

// Update runs fn with exclusive access and returns a ticket for its writes.
func (s *DB) Update(fn func(tx store.Tx) error) (store.Ticket, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := s.writeError(); err != nil {
		return nil, fmt.Errorf("%w: %v", store.ErrWrite, err)
	}
	s.backPressure()
	t := s.newTx(true)
	err := s.locked(t, fn)
	tk := s.ticketFor(max(t.last, t.readMax), t.last != 0)
	freeTx(t)
	return tk, err
}

// WriteErr is the error Update fails with now, or nil (store.WriteChecker).
func (s *DB) WriteErr() error {
	if err := s.writeError(); err != nil {
		return fmt.Errorf("%w: %v", store.ErrWrite, err)
	}
	return nil
}

// writeError is why writes are refused, or nil: the committer cannot write
// to Badger, or (everysec) the last fsync failed.
func (s *DB) writeError() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	if p := s.syncErr.Load(); p != nil {
		return *p
	}
	return nil
}

// viewLocked runs fn under the shared lock, which a panic in fn releases
// too (or every writer would wait for it for good).
func (s *DB) viewLocked(t *tx, fn func(store.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(t)
}

// locked runs fn under the exclusive lock; a panic in fn releases the lock
// and still lets the committer see what fn staged.
func (s *DB) locked(t *tx, fn func(store.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.endTx(t)
	return fn(t)
}

// endTx ends write transaction t, with mu still held: the logger may now
// write what it staged (txDone), and is woken if it staged anything.
func (s *DB) endTx(t *tx) {
	if t.last != 0 {
		s.txDone.Store(t.last)
		s.poke()
	}
}

// loggableAll lets the logger write every op staged so far, for Close.
func (s *DB) loggableAll() {
	s.omu.RLock()
	n := s.staged
	s.omu.RUnlock()
	s.txDone.Store(n)
}

func (s *DB) poke() { kickChan(s.kick) }

func kickChan(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// backPressure waits while the writes that Badger does not have yet are
// too many (overPending).
func (s *DB) backPressure() {
	for {
		if !s.started || !s.overPending(1, 1) {
			return
		}
		ch := s.progressCh(&s.committed)
		kickChan(s.applyNow)
		if !s.overPending(1, 1) {
			return
		}
		s.held.Add(1)
		select {
		case <-ch:
			s.held.Add(-1)
		case <-s.stop:
			s.held.Add(-1)
			return
		}
	}
}

// Expired is how many keys the sweeper has deleted because their deadline
// passed (Stats.Expired), without Stats' locks: the memory governor reads
// it as work the server does without commands.
func (s *DB) Expired() int64 { return s.expired.Load() }

// WritersHeld is how many writers wait at this moment for Badger to catch
// up with the writes before theirs (back-pressure): a server that
// processes no command then is not idle, it is stalled.
func (s *DB) WritersHeld() int64 { return s.held.Load() }

// earlyApply is the fraction (1/earlyApply) of the pending bounds at which
// a log round starts an apply without waiting out ApplyDelay. Larger
// batches are cheaper per write when keys are rewritten: more rewrites of
// one key collapse into its last (queueLocked), and each batch's fixed
// costs are shared by more writes. Not more than half: the other half is
// room for the writes that arrive while the apply runs, before writers
// are held (backPressure). Measured with redis-benchmark -c 50 -r 100000
// -P 16 (everysec), an eighth (8 MiB of the default 64 MiB) against half:
// SET 97-170k against 115-227k requests/s, 400k SET -d 256 36-46k against
// 41-62k, a p99 of 35 ms against 13-19 ms over 800k SETs. The price is
// paid by loads of new keys, where nothing collapses and the collector
// scans more pending entries: 1M SETs of new keys at -P 16 ran 5-15%
// slower (25-44k against 19-39k requests/s, the noise of this machine
// larger than the difference), and the harness's load of 10M keys 55k
// against 45k keys/s (bench/harness -sections memory), for a lower RSS at
// rest (275 against 199 MiB) and peak (953 against 552 MiB).
const earlyApply = 2

// collapsedApply is, as n/(n+1), the share of the pending bounds at which
// a round that collapses rewrites (collapsingLocked) starts an apply,
// instead of half: three quarters. A rewrite of a key that waits adds no
// pending entry, so such a load needs little of the other half; and each
// apply it puts off saves Badger a write of every key rewritten
// meanwhile. With half of the default 64 MiB, redis-benchmark's SET -d
// 256 over 100k keys (38 MB of pending entries) started an apply every
// 88k dirty keys, about two Badger writes per key and round, and
// Badger's flushes and compactions took half of the server's CPU. A load
// of new keys still applies at half, so the memory it holds is as
// before: with the bound raised to 128 MiB instead, the RSS 5 s after
// loading 10M keys was 203-220 MiB, against 149 (bench/harness -s
// memory).
const collapsedApply = 3

// farShare is, as 1/n, how many rewrites from the older half of the queue
// (farRewrites) a round must have had, per key queued, to count as
// collapsing rewrites: one for every eight keys. A load of new keys
// rewrites none. Neither does one that rewrites each new key at once
// (ONCE.CLAIM, then ONCE.COMPLETE, a few hundred ops later): its
// rewrites collapse in any round, so gathering longer saves nothing.
// Rewrites spread over a keyspace, as redis-benchmark -r 100000 sends,
// find their key anywhere in the queue, so about half of them are far:
// by the time 88k of its keys wait, it has queued 2.4 ops per key, 0.7
// far rewrites per key.
const farShare = 8

// collapsingLocked reports whether the round being gathered collapses
// rewrites (farShare). Called with applyMu held.
func (s *DB) collapsingLocked() bool {
	return len(s.applyQ) > 0 && s.farRewrites*farShare >= len(s.applyQ)
}

// overPending reports whether the dirty entries, the writes that Badger
// does not have yet, are at num/den of their bounds (MaxPending keys,
// MaxPendingBytes bytes).
func (s *DB) overPending(num, den int) bool {
	s.omu.RLock()
	defer s.omu.RUnlock()
	return len(s.dirty) >= s.opts.MaxPending/den*num ||
		s.dirtyBytes >= s.opts.MaxPendingBytes/int64(den)*int64(num)
}

// progressCh is the channel closed when counter moves.
func (s *DB) progressCh(counter *atomic.Uint64) chan struct{} {
	s.progMu.Lock()
	defer s.progMu.Unlock()
	if counter == &s.committed {
		return s.progApply
	}
	return s.progLog
}

// announce wakes the waiters of the logger (log) or of the applier (apply).
func (s *DB) announce(log, apply bool) {
	s.progMu.Lock()
	if log {
		close(s.progLog)
		s.progLog = make(chan struct{})
	}
	if apply {
		close(s.progApply)
		s.progApply = make(chan struct{})
	}
	s.progMu.Unlock()
}

// waitFor blocks until committed (or synced) reaches n.
func (s *DB) waitFor(ctx context.Context, n uint64, counter *atomic.Uint64) error {
	if !s.started && counter.Load() < n && !s.closed.Load() {
		// No loop runs: log and apply here.
		s.commitRound()
	}
	for {
		if counter.Load() >= n {
			return nil
		}
		ch := s.progressCh(counter)
		if counter.Load() >= n {
			return nil
		}
		if p := s.failure.Load(); p != nil {
			return fmt.Errorf("%w: %v", store.ErrWrite, *p)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.stop:
			if counter.Load() >= n {
				return nil
			}
			if !s.started {
				return store.ErrClosed
			}
			// Close commits everything it can before the committer
			// stops; wait for that.
			s.committers.Wait()
			if counter.Load() >= n {
				return nil
			}
			return store.ErrClosed
		}
	}
}

// drain waits until every staged write is committed to Badger. It must be
// called with mu held (so nothing new is staged meanwhile).
func (s *DB) drain() error {
	s.omu.RLock()
	n := s.staged
	s.omu.RUnlock()
	if s.committed.Load() >= n {
		return nil
	}
	// The caller (FLUSHDB, BACKUP) needs every staged op in Badger
	// before it goes on, those of a transaction under way too.
	s.txDone.Store(n)
	if !s.started {
		s.commitRound()
		return nil
	}
	// Raise the mark before the kick: an apply round that the kick starts
	// before the logger has logged up to n leaves the mark, so the next
	// round does not gather (see gather).
	for {
		w := s.drainTo.Load()
		if w >= n || s.drainTo.CompareAndSwap(w, n) {
			break
		}
	}
	s.poke()
	kickChan(s.applyNow)
	return s.waitFor(context.Background(), n, &s.committed)
}

// checkpointAll makes Badger hold, synced, every write staged so far, and
// deletes the whole log: what FLUSHDB needs before it drops keys behind
// Badger's back, so that no replay brings them back. Called with mu held.
func (s *DB) checkpointAll() error {
	if err := s.drain(); err != nil {
		return err
	}
	seg, err := s.wal.rotate()
	if err != nil {
		return err
	}
	if err := s.syncBadger(); err != nil {
		return err
	}
	return s.wal.remove(seg)
}

type ticket struct {
	s *DB
	n uint64
	c *atomic.Uint64 // the counter that must reach n
}

func (t ticket) Wait(ctx context.Context) error {
	return t.s.waitFor(ctx, t.n, t.c)
}

// notice is a promised call: fn once counter c reaches n.
type notice struct {
	n  uint64
	c  *atomic.Uint64
	fn func(error)
}

// Notify promises fn a call once the ticket is done (store.Notifier).
// Only the log's counters are promised (the logger raises them); none
// while the loops do not run or writes fail. Under everysec the caller
// may first write the round itself (lead), and then reports false.
func (t ticket) Notify(fn func(error)) bool {
	s := t.s
	if !s.started || (t.c != &s.logged && t.c != &s.synced) || s.failure.Load() != nil {
		return false
	}
	if t.c == &s.logged && s.lead(t.n) {
		return false
	}
	s.nmu.Lock()
	defer s.nmu.Unlock()
	// Checked under nmu: a loop raises the counter before it takes nmu
	// to make the calls due, so either it finds this notice, or this
	// finds the counter raised.
	if s.noticesShut || t.c.Load() >= t.n {
		return false
	}
	s.notices = append(s.notices, notice{n: t.n, c: t.c, fn: fn})
	return true
}

// notifyDue makes the promised calls whose counter is reached, and, when
// err is not nil (writes fail), every other one with err, as Wait fails
// while writes fail.
func (s *DB) notifyDue(err error) {
	s.nmu.Lock()
	if len(s.notices) == 0 {
		s.nmu.Unlock()
		return
	}
	// Split the list once, under nmu: a notice is either called now or
	// kept, never both, however the counters move meanwhile.
	list := s.notices
	s.notices = s.spareNotices[:0]
	s.spareNotices = nil
	due := list[:0]
	for _, nt := range list {
		if err != nil || nt.c.Load() >= nt.n {
			due = append(due, nt) // in place: never past the one read
		} else {
			s.notices = append(s.notices, nt)
		}
	}
	s.nmu.Unlock()
	for _, nt := range due {
		if nt.c.Load() >= nt.n {
			nt.fn(nil)
		} else {
			nt.fn(err)
		}
	}
	clear(list)
	s.nmu.Lock()
	if s.spareNotices == nil && cap(list) <= spareLimit {
		s.spareNotices = list[:0]
	}
	s.nmu.Unlock()
}

// shutNotices makes the last promised calls, when Close has made durable
// all it could: nil for the writes it did, ErrClosed for the others.
func (s *DB) shutNotices() {
	s.notifyDue(nil)
	s.nmu.Lock()
	left := s.notices
	s.notices = nil
	s.noticesShut = true
	s.nmu.Unlock()
	for _, nt := range left {
		nt.fn(store.ErrClosed)
	}
}

// lead writes the log round that holds op n in the calling goroutine,
// unless one is under way or op n is logged already; it reports whether
// op n is logged when it returns. Only under everysec, where a round is
// a write(2) to the page cache: the writer then sends its own replies,
// and those of the connections that handed theirs over meanwhile
// (notifyDue), where waking the logger to do it cost each unpipelined
// write about a fifth of its server CPU (docs/performance-notes.md, "A
// writer writes its own log round"). It yields once first, as the
// logger does, so that the connections with a request ready stage their
// writes and share the round. Under always a round waits for an fsync
// and groups commits (gatherGroup): the logger keeps those.
func (s *DB) lead(n uint64) bool {
	if s.opts.Fsync == FsyncAlways {
		return false
	}
	if s.logged.Load() >= n {
		return true
	}
	runtime.Gosched()
	if s.logged.Load() >= n {
		return true
	}
	if !s.logMu.TryLock() {
		return false
	}
	defer s.logMu.Unlock()
	if s.closed.Load() {
		return false // Close writes the last rounds
	}
	s.logRound(true)
	return s.logged.Load() >= n
}

// Covers reports whether t's wait implies prev's (resp.Conn.Await): prev
// is done already, or it waits for the same counter to reach a number no
// higher, which it reaches first (a counter only rises, and a failure
// fails every wait not reached yet).
func (t ticket) Covers(prev any) bool {
	switch p := prev.(type) {
	case store.Done:
		return true
	case ticket:
		return p.c == t.c && p.n <= t.n
	}
	return false
}

// stage records a write in memory and in the batch; absent says that the
// key is known to be absent before it (op.absent), which memory may also
// know. Called with mu held.
func (s *DB) stage(key []byte, val []byte, del, absent bool) uint64 {
	s.omu.Lock()
	n := s.stageLocked(key, val, del, absent)
	s.omu.Unlock()
	return n
}

// stageDeletes stages the deletion of each of keys under one taking of
// omu. The sweeper staged its two deletions a key one taking at a time,
// each waiting for the applier's cleaning slice in hand, all the while
// holding the keyspace lock: 3-7 ms of a round's hold while keys expired
// en masse. Called with mu held.
func (s *DB) stageDeletes(keys [][]byte) uint64 {
	var n uint64
	s.omu.Lock()
	for _, k := range keys {
		n = s.stageLocked(k, nil, true, false)
	}
	s.omu.Unlock()
	return n
}

// stageLocked is stage, with omu held too.
func (s *DB) stageLocked(key []byte, val []byte, del, absent bool) uint64 {
	s.staged++
	n := s.staged
	e := s.mem.get(key)
	// A clean deletion is Badger's own absence; a dirty one is the
	// key's absence once the ops before this one are applied.
	absent = absent || (e != nil && e.del)
	// A key memory holds, not deleted, is in the presence filter already
	// (and will be in the one being rebuilt: presence.go).
	held := e != nil && !e.del
	switch {
	case e == nil:
		e = newEntry(key)
		s.mem.put(e)
		s.memPeak = max(s.memPeak, s.mem.len())
		s.makeDirty(e)
	case e.n == 0:
		s.cacheBytes -= e.cost()
		s.makeDirty(e)
	default:
		s.dirtyBytes -= e.cost()
	}
	e.val, e.del, e.n, e.head = val, del, n, headOf(val)
	s.dirtyBytes += e.cost()
	if !del && !held && len(key) > 0 && key[0] == spaceKeys {
		s.addPresenceLocked(key)
	}
	s.batch = append(s.batch, op{key: e.key, e: e, val: val, del: del, absent: absent, n: n})
	return n
}

// Prefetch brings into the processor's cache what reading keys in db from
// memory will touch (store.Prefetcher), for a pipeline of commands about
// to run one by one: their cache misses then come together, not one
// after another. Keys longer than a short buffer are left out. It
// returns a sum of what it read, so that no read is left out as unused.
func (s *DB) Prefetch(db int, keys [][]byte) uintptr {
	if m := s.dbMap.Load(); m != nil && db >= 0 && db < len(m.phys) {
		db = int(m.phys[db])
	}
	var hs [aheadMax]uint64
	var kb [64]byte
	m := 0
	for _, k := range keys {
		if m == len(hs) {
			break
		}
		if len(k)+3 > len(kb) {
			continue
		}
		hs[m] = s.mem.hashBytes(appendDataKey(kb[:0], db, k))
		m++
	}
	if m < 2 {
		return 0
	}
	s.omu.RLock()
	sink := s.mem.touch(hs[:m])
	s.omu.RUnlock()
	return sink
}

// getRaw reads a Badger key through memory. The returned slice must not
// be modified.
//
// n is the number of the staged op that the value came from, when it came
// from a dirty entry (it may not be durable yet), else 0; h is the
// value's header (entry.head).
func (s *DB) getRaw(key []byte) (val []byte, ok bool, n uint64, h valHead, err error) {
	s.omu.RLock()
	e := s.mem.get(key)
	var del bool
	if e != nil {
		val, del, n, h = e.val, e.del, e.n, e.head
	}
	s.omu.RUnlock()
	if e != nil {
		return val, !del, n, h, nil
	}
	// Not in memory, so any write of key is in Badger now, and in the
	// read snapshot (refreshSnap) too.
	var out []byte
	if s.surelyAbsent(key) {
		err = badger.ErrKeyNotFound
	} else {
		err = s.readBadger(func(txn *badger.Txn) (err error) {
			out, err = s.lookup(txn, key)
			return err
		})
	}
	absent := errors.Is(err, badger.ErrKeyNotFound)
	if err != nil && !absent {
		return nil, false, 0, valHead{}, err
	}
	h = headOf(out)
	s.omu.Lock()
	// Nothing can have been staged for key meanwhile (readers hold mu);
	// the committer may only have made a staged value clean.
	if s.mem.get(key) == nil {
		e := newEntry(key)
		e.val, e.del, e.head = out, absent, h
		s.cacheLocked(e)
	}
	s.omu.Unlock()
	return out, !absent, 0, h, nil
}

// lookup reads key's value in txn (badger.ErrKeyNotFound if it has none),
// counting the read.
func (s *DB) lookup(txn *badger.Txn, key []byte) ([]byte, error) {
	s.lookups.Add(1)
	item, err := txn.Get(key)
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// readBadger runs fn in the read snapshot, or, when there is none (before
// Start, or once closing), in a new read transaction.
//
// A new transaction waits for every commit in flight to reach Badger's
// memtable (its read timestamp's watermark): while the applier wrote a
// round, every point read that missed memory waited for the whole round
// to be written, and with it, under the keyspace lock, every writer: the
// 20–200 ms stalls of ONCE.CLAIM on new keys. The snapshot is taken when
// no commit is in flight, so reads never wait.
func (s *DB) readBadger(fn func(*badger.Txn) error) error {
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	if s.snap != nil {
		return fn(s.snap)
	}
	s.ownReads.Add(1)
	return s.bdb.View(fn)
}

// refreshSnap replaces the read snapshot with one that sees every write
// to Badger so far. The applier calls it after each round it wrote, and
// before the round's entries leave memory, so that a key missing from
// memory is always in the snapshot; and so does anything else that
// changes Badger (a flush of a database).
func (s *DB) refreshSnap() {
	txn := s.bdb.NewTransaction(false)
	s.swapSnap(txn)
}

// swapSnap installs txn as the read snapshot (nil: none) and discards the
// one it replaces, once no read uses it.
func (s *DB) swapSnap(txn *badger.Txn) {
	s.snapMu.Lock()
	old := s.snap
	s.snap = txn
	s.snapGen.Add(1)
	s.snapMu.Unlock()
	if old != nil {
		old.Discard()
	}
}

// cost is what a clean entry is charged: its bytes and the map's overhead.
func (e *entry) cost() int64 { return int64(len(e.key)+len(e.val)) + 96 }

// cacheable reports whether a clean entry may stay in memory: keyspace
// values (and absences) that are not too large to be worth a slot.
func (s *DB) cacheable(e *entry) bool {
	return s.opts.CacheSize > 0 && e.key != "" && e.key[0] == spaceKeys &&
		e.cost() <= s.opts.CacheSize/16
}

// keepsClean reports whether an entry that its apply made clean stays in
// memory: a cacheable value, not a deletion. The deletion of a key is
// known in memory until Badger has it; after that, the first read of the
// key finds it absent in Badger and caches that absence (getRaw), as for
// any key never written. Kept instead, the deletions of keys that nobody
// reads again took the cache over where keys expire in numbers (ONCE
// records kept for a while): after 170k ONCE cycles kept 60 s had expired,
// their absences held the cache, each entry one more object for every
// garbage collection to mark, and SET -d 256 -P 16 then took 19-24 µs of
// server CPU per request against 15-19 without them, with 43-61
// collections per million requests against 25-32.
func (s *DB) keepsClean(e *entry) bool {
	return !e.del && s.cacheable(e)
}

// cacheLocked keeps a clean entry that is not in mem yet, evicting the
// oldest clean entries when over budget (cache.go). Called with omu held.
func (s *DB) cacheLocked(e *entry) {
	if !s.cacheable(e) {
		return
	}
	s.mem.put(e)
	s.memPeak = max(s.memPeak, s.mem.len())
	s.cacheBytes += e.cost()
	s.queueCleanLocked(e)
	s.evictLocked()
}

// shrinkMin is the fewest entries a map must once have held for
// shrinkMapsLocked to rebuild it: below, its empty buckets are not worth
// the copy.
const shrinkMin = 1 << 14

// shrinkMapsLocked rebuilds mem and dirty when they hold half or less of
// the most entries they held since their last rebuild. Neither gives
// back the slots of its largest size by itself: after a bulk load, where
// the pending bounds' worth of writes waited on top of the cache, the
// two (mem a Go map then) kept tens of MB of buckets for good (a heap profile 5 s after
// a 10M-key load: 34 MB of mem's buckets and 11 MB of dirty's, for a
// 32 MiB cache). trim calls it only when no write came since the last
// trim: under a steady load the maps would shrink after every apply
// only to grow again, and the copy holds omu (about 10 ms per hundred
// thousand entries). It reports whether it rebuilt either. Called with
// omu held.
func (s *DB) shrinkMapsLocked() bool {
	rebuilt := false
	if n := s.mem.len(); s.memPeak >= shrinkMin && n <= s.memPeak/2 {
		s.mem.shrink()
		s.memPeak = n
		s.shrinks++
		rebuilt = true
	}
	if n := len(s.dirty); s.dirtyPeak >= shrinkMin && n <= s.dirtyPeak/2 {
		// In order: the entries' indexes stay what they are.
		s.dirty, s.dirtyPeak = slices.Clone(s.dirty), n
		s.shrinks++
		rebuilt = true
	}
	s.shrinkCleanLocked()
	return rebuilt
}

// cleanLocked marks the entries of a committed round clean: up to op hi,
// they are in Badger now. Called with omu held. Each op's entry is in
// dirty while its n is set (makeDirty), and the same entry since the op
// was staged (queueLocked).
func (s *DB) cleanLocked(ops []op, hi uint64) {
	for i := range ops {
		e := ops[i].e
		if e.n == 0 || e.n > hi {
			continue
		}
		e.n = 0
		s.undirtyLocked(e)
		if o := s.orderOf(e.key); o != nil {
			o.Delete(e.key)
		}
		s.dirtyBytes -= e.cost()
		// A deletion leaves memory once Badger has it (keepsClean).
		if s.keepsClean(e) {
			s.cacheBytes += e.cost()
			s.queueCleanLocked(e)
		} else {
			s.dropLocked(e)
		}
	}
	s.evictLocked()
}

// segEnd says that log segment seg holds ops up to hi only.
type segEnd struct {
	seg uint64
	hi  uint64
}

// recoverWAL replays the log left by the last run into Badger, syncs
// Badger, deletes the replayed segments and opens a new one.
func (s *DB) recoverWAL() error {
	dir := filepath.Join(s.opts.Dir, walDirName)
	start := time.Now()
	from, err := s.loggedPosition()
	if err != nil {
		return fmt.Errorf("read the log position: %w", err)
	}
	r := &replayer{s: s, at: make(map[string]int)}
	segs, err := replayWAL(dir, from, r.add)
	if err == nil {
		err = r.flush()
	}
	if err != nil {
		return err
	}
	s.replayed = r.stats
	if len(segs) > 0 {
		if err := s.syncBadger(); err != nil {
			return fmt.Errorf("sync after log replay: %w", err)
		}
		if r.stats.read > 0 {
			s.log.Info("replayed the write-ahead log", zap.Int("writes", r.stats.read),
				zap.Int("keys_written", r.stats.written), zap.Int("batches", r.stats.batches),
				zap.Int("segments", len(segs)), zap.Duration("took", time.Since(start)))
		}
	}
	// The new segments are numbered after the recorded position's, or
	// a later crash would skip them: a restored backup carries the
	// position of the log it was taken from, and a directory whose log
	// is gone starts numbering anew.
	if from.seg > 0 && (len(segs) == 0 || segs[len(segs)-1] < from.seg) {
		segs = append(segs, from.seg)
	}
	w, err := openWAL(dir, segs, s.opts.WALSegmentSize)
	if err != nil {
		return err
	}
	s.wal = w
	if err := w.remove(w.seg - 1); err != nil {
		s.log.Warn("could not delete replayed log segments", zap.Error(err))
	}
	return nil
}

// The log's replay gathers up to replayKeys keys, or replayBytes bytes
// of keys and values, before it writes them to Badger in one batch
// (variables for tests).
var (
	replayKeys  = 1 << 17
	replayBytes = 32 << 20
)

// replayStats counts what a replay did: the ops it read from the log,
// the ops (one per key and batch) it wrote to Badger, and its batches.
type replayStats struct {
	read, written, batches int
}

// replayer writes the log's ops to Badger as the applier does: the
// rewrites of a key collapse into its last, in batches of many records.
// A log holds up to a segment (64 MiB) of ops that Badger already has,
// and a hot key may be rewritten hundreds of thousands of times in it;
// one Badger batch per record (a log round) and every rewrite written
// made a crash restart take 6 s after 6 s of INCR -P 16 on 100k keys.
// Applying only the last op of each key leaves Badger as applying them
// all in order would: each op sets or deletes its whole key.
type replayer struct {
	s     *DB
	ops   []op
	at    map[string]int // key → its op in ops
	bytes int
	stats replayStats
}

// add gathers a record's ops (walkRecord), writing the batch once it
// is full. A rewrite of a gathered key allocates nothing: the key is
// looked up without a copy, and the new value goes into the old one's
// buffer, which the replayer owns.
func (r *replayer) add(record []byte) error {
	if err := walkRecord(record, r.put); err != nil {
		return err
	}
	if len(r.ops) >= replayKeys || r.bytes >= replayBytes {
		return r.flush()
	}
	return nil
}

// put gathers one op of a record.
func (r *replayer) put(del bool, key, val []byte) {
	if r.s.refused(key, val) {
		return
	}
	r.stats.read++
	if i, ok := r.at[string(key)]; ok {
		o := &r.ops[i]
		r.bytes += len(val) - len(o.val)
		o.del = del
		if del {
			o.val = o.val[:0]
		} else if o.val = append(o.val[:0], val...); o.val == nil {
			o.val = []byte{}
		}
		return
	}
	o := op{key: string(key), del: del}
	if !del {
		o.val = bytes.Clone(val)
		if o.val == nil {
			o.val = []byte{} // an empty value, not none
		}
	}
	r.at[o.key] = len(r.ops)
	r.ops = append(r.ops, o)
	r.bytes += len(key) + len(val)
}

// flush writes the gathered ops to Badger.
func (r *replayer) flush() error {
	if len(r.ops) == 0 {
		return nil
	}
	if err := r.s.write(r.ops, nil); err != nil {
		return err
	}
	r.stats.written += len(r.ops)
	r.stats.batches++
	clear(r.ops)
	r.ops = r.ops[:0]
	clear(r.at)
	r.bytes = 0
	return nil
}

func (s *DB) logLoop() {
	defer s.wg.Done()
	defer s.committers.Done()
	for {
		select {
		case <-s.kick:
			if s.kickHook != nil {
				s.kickHook()
			}
			// The writer that kicked the logger woke it into the slot
			// its scheduler runs next, ahead of the other connections
			// that have a request ready. Yield once so that they stage
			// their writes first and share this round: one log write
			// (one fsync under "always") for many clients, as Redis's
			// event loop writes its AOF once per turn. Measured with
			// redis-benchmark -c 50: 0.74 log writes per SET before,
			// 0.13 after; P1 SET +14% and INCR +19% requests/s.
			runtime.Gosched()
			s.logMu.Lock()
			s.logRound(false)
			s.logMu.Unlock()
		case <-s.stop:
			s.logMu.Lock()
			s.logRound(false)
			s.logMu.Unlock()
			return
		}
	}
}

func (s *DB) applyLoop() {
	defer s.wg.Done()
	defer s.committers.Done()
	for {
		select {
		case <-s.applyKick:
		case <-s.stop:
			return // Close applies what is left, after the last log round
		}
		ok, calm := s.gather()
		if !ok {
			return
		}
		s.applyRound(calm)
	}
}

// gather lets logged writes pile up for ApplyDelay before they are applied,
// unless they are many or someone waits for them (applyNow). Writes are
// durable in the log already and readable from memory; what the delay buys
// is fewer, larger Badger batches, each with fixed costs (a commit through
// Badger's writer goroutine), where rewrites of one key collapse into one
// (queueLocked). It does not wait while a drain waits (drainTo). It
// reports false when the store is stopping, and quiet when it ended because
// the server was calm (CalmApply).
func (s *DB) gather() (ok, quiet bool) {
	if s.opts.ApplyDelay <= 0 {
		return true, false
	}
	if s.drainTo.Load() > s.committed.Load() {
		// The drain's kick is answered: drop it, or the next round would
		// not gather.
		select {
		case <-s.applyNow:
		default:
		}
		return true, false
	}
	// The delay counts the time the process ran, which the calm ticker
	// measures (calmWatch.ran), when it ticks often enough to; a timer
	// otherwise.
	var timeout <-chan time.Time
	if s.opts.CalmApply <= 0 || s.opts.CalmApply > s.opts.ApplyDelay {
		t := time.NewTimer(s.opts.ApplyDelay)
		defer t.Stop()
		timeout = t.C
	}
	var calm <-chan time.Time
	if s.opts.CalmApply > 0 {
		tick := time.NewTicker(s.opts.CalmApply)
		defer tick.Stop()
		calm = tick.C
	}
	w := newCalmWatch(s.opts.CalmApply, max(s.opts.CalmActivity, 1))
	w.start(s.Activity(), time.Now())
	for {
		select {
		case <-timeout:
			return true, false
		case <-s.applyNow:
			return true, false
		case <-s.stop:
			return false, false
		case due := <-calm:
			if w.calm(s.Activity(), time.Now(), due) {
				s.calmApplies.Add(1)
				return true, true
			}
			if timeout == nil && w.ran >= s.opts.ApplyDelay {
				s.ranApplies.Add(1)
				return true, false
			}
		}
	}
}

// calmWatch judges, at each tick of a ticker, whether the server was calm
// since the tick before: its activity moved by less than quiet.
//
// A tick that comes late judges nothing (tickJudge): the process was
// stopped (SIGSTOP, a paused VM or container) or starved of CPU when the
// tick fell due, and its activity stood still because it did not run, not
// because nothing came. The ticker holds the tick that fell due while the
// process was stopped and delivers it at once when it runs again, before
// the work waiting for it is read: taken for calm, it started an apply (or
// a trim's collection) just as that work arrived. bench/harness pauses
// each server while it measures the other, and GET -P 16 right after such
// a pause ran at 280-330k requests/s with 85-106 ticks of server CPU,
// against 570k and 35 with no apply under it.
//
// ran adds up the time the process ran, as far as the ticks tell: the
// intervals judged, and one period for a late tick. gather counts
// ApplyDelay in it, so that the writes a busy server gathers wait for
// that long of its running, not of the wall clock's. A delay that ran
// out while the process was stopped fired the moment it ran again, under
// the load that had waited: in the harness's sequence of cells, the
// apply of 200k keys began in the first milliseconds of one cell each
// round. Stopped, the process gathered nothing more to apply, and the
// log and the pending writes, which the delay bounds, did not grow.
type calmWatch struct {
	ticks tickJudge
	quiet int64 // activity an interval must stay under to be calm
	last  int64
	ran   time.Duration
}

func newCalmWatch(every time.Duration, quiet int64) calmWatch {
	return calmWatch{ticks: tickJudge{every: every}, quiet: quiet}
}

func (w *calmWatch) start(activity int64, now time.Time) {
	w.last = activity
	w.ticks.start(now)
}

// calm takes the activity at a tick that fell due at due (the time the
// ticker sends) and came at now, and reports whether the interval since
// the last tick judged was calm.
func (w *calmWatch) calm(activity int64, now, due time.Time) bool {
	since := now.Sub(w.ticks.at)
	switch w.ticks.judge(now, due) {
	case tickEarly:
		return false
	case tickLate:
		w.last = activity
		w.ran += w.ticks.every
		return false
	}
	w.ran += since
	calm := activity-w.last < w.quiet
	w.last = activity
	return calm
}

// tickJudge tells, for a periodic judge of what happened between its
// ticks (calmWatch, trim), which ticks may judge their interval.
//
// A tick is late when it comes more than tickSlack after it fell due (the
// time a time.Ticker sends is when the tick fell due, not when it was
// received), or more than twice the period after the last tick judged.
// A stop of the process as short as a quarter of a second went unseen by
// the second rule alone: the harness stops oncekv for each cell of the
// other servers, and resumes every server for a moment between two
// cells. The tick delivered in that moment counted anew; the one
// delivered at the next resumption, 0.25-0.4 s later, judged the interval
// between, all of it stopped, as calm, and applies of 150-200k keys
// started as the next cell began, three in one run (GET -P 16 at 286-329k
// requests/s against 540-620k).
//
// The tick after a late one judges nothing either when it comes early
// (under three quarters of the period after the late one): a ticker keeps
// its phase, so that tick comes anywhere from at once to a period later
// (64 and 97 ms after a pause, with 200 ms), often before the paused
// load's clients have sent anything again. The interval stays open: the
// next tick judges it whole.
type tickJudge struct {
	every   time.Duration
	at      time.Time // the last tick that judged, or came late
	resumed bool      // the last tick came late
}

// tickSlack is how long after it fell due a tick may come and still judge
// its interval (a quarter of the period if that is less). A stop of the
// process that a tick fell due in delays it by as much as the rest of the
// stop. A running process receives its ticks within a millisecond of
// their due time when lightly loaded; under a load that saturates both
// cores, up to 14 ms after (3M SETs of new keys at -P 16: 5 of 42 trims
// over 10 ms, skipped). That costs nothing: a saturated server is not
// calm, and its trim waits for the next tick.
const tickSlack = 10 * time.Millisecond

// A tick is on time, late or early (tickJudge.judge).
type tickVerdict int

const (
	// tickOnTime: judge the interval since the last tick that judged.
	tickOnTime tickVerdict = iota
	// tickLate: the process was stopped or starved when the tick fell
	// due: what was counted meanwhile tells nothing. Count anew from
	// here.
	tickLate
	// tickEarly: the first tick after a late one, under three quarters of
	// the period after it. Too short to judge: leave the interval open.
	tickEarly
)

func (j *tickJudge) start(now time.Time) { j.at, j.resumed = now, false }

// judge classifies a tick that fell due at due and came at now, and moves
// the interval's start.
func (j *tickJudge) judge(now, due time.Time) tickVerdict {
	since := now.Sub(j.at)
	switch {
	case now.Sub(due) > min(tickSlack, j.every/4) || since > 2*j.every:
		j.at, j.resumed = now, true
		return tickLate
	case j.resumed && since < j.every*3/4:
		return tickEarly
	}
	j.at, j.resumed = now, false
	return tickOnTime
}

// Activity is the count that CalmApply watches, which moves whenever the
// server works: the writes staged, plus Options.Activity.
func (s *DB) Activity() int64 {
	s.omu.RLock()
	n := int64(s.staged)
	s.omu.RUnlock()
	if s.opts.Activity != nil {
		n += s.opts.Activity()
	}
	return n
}

// commitRound logs and applies everything staged so far, in the calling
// goroutine (a store that was never started, and Close).
func (s *DB) commitRound() {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	s.logMu.Lock()
	s.logRound(false)
	s.logMu.Unlock()
	s.applyRound(true)
}

// retry runs write until it succeeds, in the failure state (writes
// refused) meanwhile; it gives up only when the store is closing.
func (s *DB) retry(write func() error) bool {
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil {
			if p := s.failure.Load(); p != nil {
				s.log.Info("store writes again")
				s.failure.Store(nil)
			}
			return true
		}
		if attempt == 0 {
			s.log.Error("store write failed; refusing writes until it succeeds", zap.Error(err))
		}
		s.failure.Store(&err)
		s.announce(true, true)
		s.notifyDue(fmt.Errorf("%w: %v", store.ErrWrite, err))
		select {
		case <-s.stop:
			if attempt > 3 {
				return false
			}
		case <-time.After(time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond):
		}
	}
}

// logRound writes everything staged so far to the log as one record
// (synced under "always"), then hands it to the applier. The logger
// retries a failed write until it succeeds, and writes round after round
// while it is kicked; a writer that leads writes one round and tries once,
// handing a failed round back to the logger. The caller holds logMu.
func (s *DB) logRound(lead bool) {
	for {
		if s.opts.Fsync == FsyncAlways {
			s.gatherGroup()
		}
		s.omu.Lock()
		ops, rest := splitDone(s.batch, s.txDone.Load())
		if len(ops) == 0 {
			s.omu.Unlock()
			return
		}
		// The ops of a transaction still under way wait for the next
		// round, which its end starts (endTx).
		s.batch, s.spareBatch = append(s.spareBatch, rest...), nil
		clear(rest)
		hi := ops[len(ops)-1].n
		s.omu.Unlock()
		write := func() error {
			if s.writeHook != nil {
				if err := s.writeHook(ops); err != nil {
					return err
				}
			}
			if err := s.checkSpace(ops); err != nil {
				return err
			}
			if err := s.wal.append(ops); err != nil {
				return err
			}
			s.logWrites.Add(1)
			if s.opts.Fsync == FsyncAlways {
				start := time.Now()
				if err := s.wal.syncAs(s.group.rawSync()); err != nil {
					return err
				}
				s.omu.Lock()
				ahead := len(s.batch)
				s.omu.Unlock()
				s.group.synced(len(ops), ahead, start, time.Now())
			}
			return nil
		}
		if lead {
			if err := write(); err != nil {
				// Back to the front of the batch, in order, for the
				// logger: it retries, and reports the failure to every
				// waiter, the leader's connection included (Notify).
				s.omu.Lock()
				s.batch = append(ops, s.batch...)
				s.omu.Unlock()
				s.poke()
				return
			}
			s.ledWrites.Add(1)
		} else if !s.retry(write) {
			// The round's ops are lost (the store is closing): memory
			// no longer tells what Badger will hold.
			s.noSkip.Store(true)
			return
		}
		pos, written := s.wal.pos(), s.wal.total()
		var end *segEnd
		if s.wal.full() {
			if seg, err := s.wal.rotate(); err == nil {
				end = &segEnd{seg: seg, hi: hi}
			} else {
				s.log.Warn("could not start a new log segment", zap.Error(err))
			}
		}
		s.applyMu.Lock()
		s.applyHi, s.applyPos, s.applyWritten = hi, pos, written
		if end != nil {
			s.segsDone = append(s.segsDone, *end)
		}
		s.queueLocked(ops)
		collapsing := s.collapsingLocked()
		unapplied := written - s.roundWritten
		s.applyMu.Unlock()
		if cap(ops) <= spareLimit {
			clear(ops) // the applier has copies; let values go
			s.omu.Lock()
			s.spareBatch = ops[:0]
			s.omu.Unlock()
		}
		// Acknowledged once queued: a writer that sees its op logged
		// finds it in the applier's queue too.
		s.logged.Store(hi)
		if s.opts.Fsync == FsyncAlways {
			raiseTo(&s.synced, hi)
		}
		kickChan(s.applyKick)
		num, den := 1, earlyApply
		if collapsing {
			num, den = collapsedApply, collapsedApply+1
		}
		if unapplied >= s.opts.WALSegmentSize || s.overPending(num, den) {
			kickChan(s.applyNow)
		}
		s.announce(true, false)
		s.notifyDue(nil)
		if lead {
			return
		}
		select {
		case <-s.kick:
		default:
			return
		}
	}
}

// splitDone splits batch, in staging order, into the ops numbered up to
// done and the ones after.
func splitDone(batch []op, done uint64) (ops, rest []op) {
	if len(batch) == 0 || batch[len(batch)-1].n <= done {
		return batch, nil
	}
	k := sort.Search(len(batch), func(i int) bool { return batch[i].n > done })
	return batch[:k], batch[k:]
}

// applyRound writes to Badger everything logged and not applied yet, as
// one batch, then makes its entries clean; and deletes the log segments
// that Badger now holds (after syncing Badger). calm says that the server
// is calm (gather), or that nothing writes meanwhile (commitRound): the
// queue filling during this round does not start from a large spare.
func (s *DB) applyRound(calm bool) {
	s.applyMu.Lock()
	ops := s.applyQ
	if calm && cap(s.spareQ) > reuseLimit {
		s.spareQ = nil
	}
	s.applyQ = s.spareQ
	s.spareQ = nil
	s.queueHint = len(ops)
	s.farRewrites = 0
	hi, pos := s.applyHi, s.applyPos
	prevWritten := s.roundWritten
	s.roundWritten = s.applyWritten
	var done []segEnd
	for len(s.segsDone) > 0 && s.segsDone[0].hi <= hi {
		done = append(done, s.segsDone[0])
		s.segsDone = s.segsDone[1:]
	}
	s.applyMu.Unlock()
	if len(ops) == 0 {
		return
	}
	if s.applyHook != nil {
		s.applyHook(ops)
	}
	p := s.newPacer()
	if !s.retry(func() error {
		if s.applyErr != nil {
			if err := s.applyErr(); err != nil {
				return err
			}
		}
		if err := s.syncLogUpTo(hi); err != nil {
			return err
		}
		p.restart() // the fsync (and a retry's backoff) was no work to pace
		return s.write(ops, p)
	}) {
		// Closing while Badger fails: a later round (Close's) must still
		// apply these ops, or, if it succeeded without them, committed
		// would reach logged and Close would delete the log they are in.
		s.requeue(ops, done, prevWritten)
		return
	}
	s.refreshSnap()
	// Clean in slices, so that readers and writers, who need omu, wait
	// for one slice at most rather than for a whole round. A rest lets go
	// of cleanMu too: a scan that starts between two slices opens its
	// Badger transaction after the whole round was written, so an entry
	// cleaned after it started is one its transaction sees, and one not
	// yet cleaned is in the overlay, as it is in Badger.
	s.cleanMu.Lock()
	p.restart() // waiting for a scan to end was no work to pace
	for i := 0; i < len(ops); i += cleanSlice {
		lockFresh(&s.omu)
		s.cleanLocked(ops[i:min(i+cleanSlice, len(ops))], hi)
		s.omu.Unlock()
		if i+cleanSlice >= len(ops) {
			break // the round is done: no rest before what follows it
		}
		if p.due() {
			s.cleanMu.Unlock()
			p.rest()
			s.cleanMu.Lock()
			p.restart()
		}
	}
	s.omu.Lock()
	s.dropOrderLocked()
	s.omu.Unlock()
	s.cleanMu.Unlock()
	s.committed.Store(hi)
	s.announce(false, true)
	s.spareQueue(ops)
	if len(done) > 0 {
		s.checkpoint(done[len(done)-1].seg)
	}
	s.recordPosition(pos)
}

// syncLogUpTo makes the log durable up to op hi, for the applier, before
// Badger gets the ops up to it. Badger then never holds a write that the
// log could lose: after a power loss under everysec (or no), Badger holds
// a prefix of what the log kept, and the replay completes it, so the
// store comes back as it was at some moment, never with part of a
// transaction whose record the log lost. Under always the ops are synced
// before they are queued. It costs an fsync per apply round at most,
// rounds being seconds apart under load.
func (s *DB) syncLogUpTo(hi uint64) error {
	if s.synced.Load() >= hi {
		return nil
	}
	if err := s.wal.sync(); err != nil {
		return fmt.Errorf("fsync the log before applying it: %w", err)
	}
	raiseTo(&s.synced, hi)
	return nil
}

// raiseTo stores v in a unless a holds more already.
func raiseTo(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// positionKey is the meta key where Badger keeps the log position up to
// which it holds every write, synced (recordPosition).
var positionKey = metaKey("\x00store:log-position")

// positionEvery spaces the Badger syncs that recordPosition makes.
const positionEvery = time.Second

// recordPosition records in Badger that it holds every write logged
// before pos, so that a replay after a crash starts there instead of at
// the start of the log's oldest segment (up to 64 MiB, most of which
// Badger holds already: 1.8 s before the first GET after a crash with
// 10M keys). Called by the applier once the writes up to pos are
// applied. Badger is synced first, so the position never claims writes
// that a power loss could take from Badger; the position itself is not
// synced: if it is lost, an earlier one (or none) is read, which claims
// less. It syncs at most once per positionEvery.
func (s *DB) recordPosition(pos walPos) {
	if pos.seg == 0 || time.Since(s.posSynced) < positionEvery {
		return
	}
	s.posSynced = time.Now()
	if err := s.syncBadger(); err != nil {
		s.log.Warn("could not sync Badger to record the log position", zap.Error(err))
		return
	}
	err := s.bdb.Update(func(txn *badger.Txn) error { return txn.Set(positionKey, pos.encode()) })
	if err != nil {
		s.log.Warn("could not record the log position", zap.Error(err))
	}
}

// loggedPosition is the log position that Badger holds every write
// before (recordPosition); the zero position if none is recorded.
func (s *DB) loggedPosition() (walPos, error) {
	rec, found, err := s.readRecord(positionKey)
	if err != nil || !found {
		return walPos{}, err
	}
	pos, ok := decodeWALPos(rec)
	if !ok {
		s.log.Warn("ignored a damaged log position: the whole log is replayed")
	}
	return pos, nil
}

// readRecord reads one of the store's own records (a meta key) straight
// from Badger: found is false when there is none. For Open, before the
// read snapshot exists.
func (s *DB) readRecord(key []byte) (rec []byte, found bool, err error) {
	err = s.bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err == nil {
			found = true
			rec, err = item.ValueCopy(nil)
		}
		return err
	})
	return rec, found, err
}

// requeue puts back the ops and finished segments of a round that could
// not be applied, before those logged since (whose writes of the same
// keys are newer and win); written is roundWritten before the round.
func (s *DB) requeue(ops []op, done []segEnd, written int64) {
	// Badger may hold part of the failed batch (a write batch commits
	// as it grows), so the ops' absent no longer describes it.
	s.noSkip.Store(true)
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	newer := s.applyQ
	s.applyQ = nil
	s.farRewrites = 0 // counted again, over the queue rebuilt
	s.queueLocked(ops)
	s.queueLocked(newer)
	s.segsDone = append(done, s.segsDone...)
	s.roundWritten = written
}

// lockFresh takes l after yielding the processor, for background work that
// holds a lock every command needs (the applier cleaning a slice of its
// round, the sweeper's rounds): it starts its critical section with a
// fresh time slice. On two cores shared with 50 busy connections, a
// holder that the scheduler preempted mid-section kept the lock for a
// turn of the run queue: the keyspace lock held 65-150 ms for under a
// millisecond of work, and a write on another connection waited that
// long. Measured (a SET every 5 ms during 50 clients of ONCE cycles that
// expire, three alternations): its worst wait 267-342 ms without,
// 134-173 with; the seconds whose worst wait passed 100 ms, 5-8 against
// 2-4.
func lockFresh(l sync.Locker) {
	runtime.Gosched()
	l.Lock()
}

// reuseLimit is the largest capacity of a round's queue that the applier
// keeps for a later round whatever comes after it (spareQueue).
const reuseLimit = 1 << 16

// spareQueue keeps the queue of an applied round, ops, for the next round
// to queue into (cleared: its values may be large) rather than growing a
// new one from nothing. Under a stream of writes (ONCE answers expiring
// by the hundred thousand) rounds are larger than reuseLimit, and a new
// queue for each was a quarter of the bytes the server allocated; yet a
// burst's queues must not stay allocated once it is over. So a queue over
// reuseLimit is kept only while writes go on (the queue filling meanwhile
// holds some) and the round used a quarter of it at least; and a large
// queue found empty is let go.
func (s *DB) spareQueue(ops []op) {
	s.applyMu.Lock()
	going := len(s.applyQ) > 0
	if !going && cap(s.applyQ) > reuseLimit {
		s.applyQ = nil
	}
	s.applyMu.Unlock()
	if cap(ops) > reuseLimit && (!going || len(ops) < cap(ops)/4) {
		return
	}
	clear(ops)
	s.applyMu.Lock()
	s.spareQ = ops[:0]
	s.applyMu.Unlock()
}

// spareLimit is the largest batch whose slice the logger keeps for the
// next one.
const spareLimit = 1 << 12

// cleanSlice is how many entries the applier makes clean under one lock:
// about 50 µs of holding omu here (0.4 µs an entry). Readers and writers
// need omu, and the applier takes it back as soon as it has let it go
// (lockFresh yields once first), so while a round is cleaned they mostly
// get in only between slices. Cleaning a fresh server's first round of
// ONCE cycles (389k entries, 150-250 ms), 50 clients completed at worst
// 155 and 256 cycles in 100 ms with 2048 a slice (0.9 ms), against 257
// and 571 with 128, out of a usual 2.7-3.2k (two runs each).
const cleanSlice = 128

// checkpoint syncs Badger and deletes the log segments up to seg, whose
// writes it holds.
func (s *DB) checkpoint(seg uint64) {
	if err := s.syncBadger(); err != nil {
		s.log.Warn("checkpoint: sync failed; keeping the log", zap.Error(err))
		return
	}
	if err := s.wal.remove(seg); err != nil {
		s.log.Warn("checkpoint: could not delete log segments", zap.Error(err))
	}
}

// queueLocked hands logged ops to the applier, each key's latest write
// replacing the one already waiting. The waiting op's absent describes
// Badger before both, so the replacement takes it: a deletion of a key
// that Badger held, then a put and a deletion, must still delete it.
// Called with applyMu held.
//
// A key's waiting op is found through its entry, not a map of the queue:
// every op of a key that waits for the applier was staged into the same
// entry, which stays in memory, dirty, until the applier makes it clean
// after writing the key's latest op (a key's ops meet in one queue only
// before that). The entry's place is checked against the queue, so a
// place left from an earlier round, or by a requeue, is simply stale.
// Measured with redis-benchmark -c 50 -P 16 -r 100000 -t incr: a map of
// the queue was a fifth of the bytes allocated and a tenth of the CPU.
func (s *DB) queueLocked(ops []op) {
	for i := range ops {
		e := ops[i].e
		if j := int(e.queued); j < len(s.applyQ) && s.applyQ[j].e == e {
			if j < len(s.applyQ)/2 {
				s.farRewrites++
			}
			absent := s.applyQ[j].absent
			s.applyQ[j] = ops[i]
			s.applyQ[j].absent = absent
			continue
		}
		if n := len(s.applyQ); n == cap(s.applyQ) && n >= reuseLimit/2 && s.queueHint > n {
			// A round as large as the last: grow to its size once. A
			// small round never does, so a write after a burst does
			// not allocate the burst's queue.
			s.applyQ = slices.Grow(s.applyQ, s.queueHint+s.queueHint/4-n)
		}
		if len(s.applyQ) < math.MaxUint32 {
			e.queued = uint32(len(s.applyQ))
		}
		s.applyQ = append(s.applyQ, ops[i])
	}
}

// write applies ops, one per key (queueLocked), to Badger in one batch,
// or, while p paces the round, in chunks of paceChunk ops with a rest
// after each. A deletion of a key that Badger does not hold is left out.
func (s *DB) write(ops []op, p *pacer) error {
	wb := s.bdb.NewWriteBatch()
	defer func() { wb.Cancel() }()
	skip := !s.noSkip.Load()
	for i := range ops {
		if i > 0 && i%paceChunk == 0 && p != nil && p.pacing() {
			if err := wb.Flush(); err != nil {
				return err
			}
			wb.Cancel() // discards the transaction Flush left open
			p.rest()
			wb = s.bdb.NewWriteBatch()
		}
		o := &ops[i]
		var err error
		if o.del && o.absent && skip {
			s.skippedDeletes.Add(1)
			continue
		}
		if o.del {
			err = wb.Delete([]byte(o.key))
		} else {
			err = wb.Set([]byte(o.key), o.val)
		}
		if err != nil {
			return err
		}
	}
	return wb.Flush()
}

func (s *DB) syncLoop() {
	defer s.wg.Done()
	defer s.committers.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c := s.logged.Load()
			if c == s.synced.Load() && s.syncErr.Load() == nil {
				continue // nothing written since the last fsync
			}
			if err := s.wal.sync(); err != nil {
				if s.syncErr.Load() == nil {
					s.log.Error("fsync failed; refusing writes until it succeeds", zap.Error(err))
				}
				err = fmt.Errorf("fsync: %w", err)
				s.syncErr.Store(&err)
				continue
			}
			if s.syncErr.Load() != nil {
				s.log.Info("fsync works again")
				s.syncErr.Store(nil)
			}
			raiseTo(&s.synced, c)
		case <-s.stop:
			return
		}
	}
}

// every runs fn every d, in a goroutine of the store's, until the store
// stops or fn reports false.
func (s *DB) every(d time.Duration, fn func(due time.Time) bool) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case due := <-t.C:
				if !fn(due) {
					return
				}
			case <-s.stop:
				return
			}
		}
	}()
}

// newIterator opens an iterator of txn, counting it as a read of the
// tables for trimTables, at its opening and again at its close (a scan
// maps table pages all along, and a trim while it runs may find no other
// sign of it).
func (s *DB) newIterator(txn *badger.Txn, o badger.IteratorOptions) tableIter {
	s.tableReads.Add(1)
	return tableIter{Iterator: txn.NewIterator(o), s: s}
}

// tableIter is a Badger iterator that counts its close in tableReads.
type tableIter struct {
	*badger.Iterator
	s *DB
}

// Close closes the iterator.
func (it tableIter) Close() {
	it.Iterator.Close()
	it.s.tableReads.Add(1)
}

// trimQuietReads is the rate of point reads from Badger's tables (lookup:
// reads that missed memory, by GETs and by writes and expirations of keys
// not in memory, which read the old value), a second, up to which trim
// hands the table pages back. Above it, the next reads map the pages
// again, a fault each, and the trim only adds that cost: measured with 10M
// keys (1.3 GB of tables) and redis-benchmark GETs of random keys, a trim
// every second cut the GETs by 40% unpipelined (13-16k against 20-26k a
// second) and by two thirds with -P 16 (21k against 60-64k), and the run
// still ended with 686 MB of tables mapped, against 1.3 GB with no trim.
// So while reads stream in, the pages stay mapped (clean pages of files,
// which the kernel reclaims under memory pressure), and the first quiet
// interval hands them all back.
const trimQuietReads = 1000

// trimTick, at a tick of the trim ticker that fell due at due, hands
// table pages back to the page cache, so that the process's resident
// memory is its own (trim_linux.go), unless reads stream in
// (trimQuietReads), releases the arenas Badger's table builders left in
// their pool (builders.go), and, when no write came since the last trim,
// rebuilds the maps of entries that a burst left oversized
// (shrinkMapsLocked) and hands the memory they held back to the kernel.
// A tick that came late, or early after a late one, does none of that
// but the arenas (tickJudge).
func (s *DB) trimTick(due time.Time) bool {
	s.trims.Add(1)
	s.drainBuilders()
	when := tickOnTime
	if s.opts.TrimInterval > 0 && !s.trimTicks.at.IsZero() {
		when = s.trimTicks.judge(time.Now(), due)
	}
	if when == tickEarly {
		// Too soon after a late trim (calmWatch): let the next trim judge
		// the interval whole.
		s.trimsEarly.Add(1)
		return true
	}
	if when == tickLate {
		// The process did not run since the last trim (calmWatch): the
		// counts below tell nothing of the interval. Take them anew.
		s.omu.Lock()
		s.trimStaged = s.staged
		s.omu.Unlock()
		s.trimReads = s.lookups.Load()
		s.trimActivity = s.Activity()
		s.trimsLate.Add(1)
		return true
	}
	s.omu.Lock()
	quiet := s.staged == s.trimStaged
	rebuilt := quiet && s.shrinkMapsLocked()
	s.trimStaged = s.staged
	s.omu.Unlock()
	reads := s.lookups.Load()
	busy := reads-s.trimReads > s.trimQuiet
	s.trimReads = reads
	act := s.Activity()
	calm := act-s.trimActivity <= s.trimQuiet
	s.trimActivity = act
	if rebuilt || quiet && calm && !busy && s.heapSpareQuietly() {
		// The old maps, and whatever else the burst left, are garbage
		// now, but a quiet server allocates too little to start a
		// collection (Go forces one every two minutes): after a 1M-key
		// load, the RSS at rest kept the burst's heap until then.
		s.release()
	}
	if busy {
		s.trimsWaited.Add(1)
		return true
	}
	if _, err := s.trimTables(); err != nil {
		s.log.Warn("could not trim table mappings; they stay resident", zap.Error(err))
		return false
	}
	return true
}

// heapSpareRelease is how much memory the heap must hold beyond its live
// objects, at least, on a server that neither writes nor reads, before a
// trim hands it back to the kernel (heapSpareQuietly); and heapSpareShare
// the part of the live heap it must reach, if larger.
const (
	heapSpareRelease = 16 << 20
	heapSpareShare   = 4 // a quarter
)

// heapSpareQuietly reports whether the heap holds, beyond its live
// objects, heapSpareRelease and a quarter of them that a release would
// hand back, with no write, Badger read or stream of commands to account
// for it (trim checks those; a busy server reuses what it frees, and a
// release would only force a collection on it). The work a burst leaves
// behind, the last apply and Badger's flushes and compactions, runs after
// the server turned calm; what it frees, Go keeps as free pages up to the
// next collection's goal, twice the live heap within the memory limit,
// and what it leaves as garbage until Go's two-minute collection. 3M keys
// loaded with redis-benchmark -P 64, 30 s after the load: 141 MiB of
// anonymous RSS with a third of the heap's objects garbage (99 MB of
// them, 66 MB live), or 154 MiB with 51 MB of free pages kept after a
// collection, against 102 when the release came after that work. An
// earlier rule, a heap grown by as much since the last release, missed
// a heap that shrank to its live objects after a release during the
// load's tail without handing the pages back: 2M keys loaded, 28 s
// after the load, 150 MiB of anonymous RSS for 74 MB in use.
func (s *DB) heapSpareQuietly() bool {
	spare, live := s.heapSpare()
	return spare >= max(heapSpareRelease, live/heapSpareShare)
}

// heapSpareBytes is what a release could hand back of the heap: its dead
// objects not collected yet (its objects, less those live at the last
// collection) and its free pages not returned to the kernel, which Go's
// scavenger keeps up to the next collection's goal; and the live heap at
// the last collection (runtime/metrics). The unused parts of spans stay.
func heapSpareBytes() (spare, live int64) {
	sample := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(sample)
	v := func(i int) int64 {
		if sample[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(sample[i].Value.Uint64())
	}
	return max(0, v(0)-v(2)) + v(1), v(2)
}

// badgerLogger passes Badger's log on: its errors and warnings as such,
// its info chatter (tables opened, compactions…) at debug only, its debug
// not at all. Badger ends its messages with a newline, which the log's
// own line ending makes redundant.
type badgerLogger struct{ l *zap.SugaredLogger }

func badgerMsg(f string, a []any) string {
	return "badger: " + strings.TrimRight(fmt.Sprintf(f, a...), "\n")
}

func (b badgerLogger) Errorf(f string, a ...any)   { b.l.Error(badgerMsg(f, a)) }
func (b badgerLogger) Warningf(f string, a ...any) { b.l.Warn(badgerMsg(f, a)) }
func (b badgerLogger) Infof(f string, a ...any) {
	if b.l.Desugar().Core().Enabled(zap.DebugLevel) {
		b.l.Debug(badgerMsg(f, a))
	}
}
func (b badgerLogger) Debugf(f string, a ...any) {}
