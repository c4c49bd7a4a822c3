package commands

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/oncekv/oncekv/internal/hashcodec"
	"github.com/oncekv/oncekv/internal/zcodec"
	"github.com/oncekv/oncekv/store"
)

func keyCommands() []*Command {
	kw := func(c ...string) []string { return append([]string{"keyspace", "write"}, c...) }
	kr := func(c ...string) []string { return append([]string{"keyspace", "read"}, c...) }
	expire := func(name string, unit int64, abs bool) *Command {
		return &Command{Name: name, Arity: -3, Flags: Write | Fast | Borrows, FirstKey: 1, LastKey: 1,
			Categories: kw("fast"), Run: expireCmd(unit, abs)}
	}
	ttl := func(name string, ms, abs bool) *Command {
		return &Command{Name: name, Arity: 2, Flags: ReadOnly | Fast | Borrows, FirstKey: 1, LastKey: 1,
			Categories: kr("fast"), Run: ttlCmd(ms, abs)}
	}
	return []*Command{
		{Name: "del", Arity: -2, Flags: Write | Borrows, FirstKey: 1, LastKey: -1, Categories: kw("slow"), Run: delCmd},
		{Name: "unlink", Arity: -2, Flags: Write | Fast | Borrows, FirstKey: 1, LastKey: -1, Categories: kw("fast"), Run: delCmd},
		{Name: "exists", Arity: -2, Flags: ReadOnly | Fast | Borrows, FirstKey: 1, LastKey: -1, Categories: kr("fast"), Run: existsCmd},
		{Name: "touch", Arity: -2, Flags: ReadOnly | Fast | Borrows, FirstKey: 1, LastKey: -1, Categories: kr("fast"), Run: existsCmd},
		expire("expire", 1000, false), expire("pexpire", 1, false),
		expire("expireat", 1000, true), expire("pexpireat", 1, true),
		ttl("ttl", false, false), ttl("pttl", true, false),
		ttl("expiretime", false, true), ttl("pexpiretime", true, true),
		{Name: "persist", Arity: 2, Flags: Write | Fast | Borrows, FirstKey: 1, LastKey: 1, Categories: kw("fast"), Run: persistCmd},
		{Name: "type", Arity: 2, Flags: ReadOnly | Fast | Borrows, FirstKey: 1, LastKey: 1, Categories: kr("fast"), Run: typeCmd},
		{Name: "keys", Arity: 2, Flags: ReadOnly, Categories: kr("slow", "dangerous"), Run: keysCmd},
		{Name: "scan", Arity: -2, Flags: ReadOnly, Categories: kr("slow"), Run: scanCmd},
		{Name: "rename", Arity: 3, Flags: Write, FirstKey: 1, LastKey: 2, Categories: kw("slow"), Run: renameCmd(false)},
		{Name: "renamenx", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 2, Categories: kw("fast"), Run: renameCmd(true)},
		{Name: "randomkey", Arity: 1, Flags: ReadOnly, Categories: kr("slow"), Run: randomkeyCmd},
		{Name: "dump", Arity: 2, Flags: ReadOnly | Borrows, FirstKey: 1, LastKey: 1, Categories: kr("slow"), Run: dumpCmd},
		{Name: "restore", Arity: -4, Flags: Write | DenyOOM | Borrows, FirstKey: 1, LastKey: 1,
			Categories: kw("slow", "dangerous"), Run: restoreCmd},
		{Name: "copy", Arity: -3, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 2, Categories: kw("slow"), Run: copyCmd},
		{Name: "move", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Categories: kw("fast"), Run: moveCmd},
		{Name: "swapdb", Arity: 3, Flags: Write | Fast, Categories: kw("fast", "dangerous"), Run: swapdbCmd},
		objectCommands(),
	}
}

func delCmd(x *Ctx) {
	var n int64
	for _, k := range x.Args[1:] {
		ok, err := x.Tx.Delete(x.DB, k)
		if err != nil {
			x.Fail(err)
			return
		}
		if ok {
			n++
		}
	}
	x.W.Int(n)
}

func existsCmd(x *Ctx) {
	var n int64
	for _, k := range x.Args[1:] {
		_, ok, err := x.lookup(k)
		if err != nil {
			x.Fail(err)
			return
		}
		if ok {
			n++
		}
	}
	x.W.Int(n)
}

// expireFlags are EXPIRE's NX XX GT LT.
type expireFlags struct{ nx, xx, gt, lt bool }

func parseExpireFlags(args [][]byte) (expireFlags, error) {
	var f expireFlags
	for _, a := range args {
		switch {
		case eq(a, "nx"):
			f.nx = true
		case eq(a, "xx"):
			f.xx = true
		case eq(a, "gt"):
			f.gt = true
		case eq(a, "lt"):
			f.lt = true
		default:
			return f, errorf("ERR Unsupported option %s", cString(a))
		}
	}
	if f.nx && (f.xx || f.gt || f.lt) {
		return f, errorf("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if f.gt && f.lt {
		return f, errorf("ERR GT and LT options at the same time are not compatible")
	}
	return f, nil
}

// allows reports whether the flags allow replacing deadline cur (0: none)
// with when.
func (f expireFlags) allows(cur, when int64) bool {
	switch {
	case f.nx && cur != 0, f.xx && cur == 0:
		return false
	case f.gt && (cur == 0 || when <= cur):
		return false
	case f.lt && cur != 0 && when >= cur:
		return false
	}
	return true
}

func expireCmd(unit int64, absolute bool) Handler {
	return func(x *Ctx) {
		f, err := parseExpireFlags(x.Args[3:])
		if err != nil {
			x.Fail(err)
			return
		}
		when, ok := x.intArg(2)
		if !ok {
			return
		}
		if unit == 1000 {
			if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
				x.Fail(invalidExpire(x.Cmd.Name))
				return
			}
			when *= 1000
		}
		var base int64
		if !absolute {
			base = x.Now()
		}
		if when > math.MaxInt64-base {
			x.Fail(invalidExpire(x.Cmd.Name))
			return
		}
		when += base
		key := x.Args[1]
		v, found, err := x.Tx.Get(x.DB, key)
		if err != nil {
			x.Fail(err)
			return
		}
		if !found || !f.allows(v.ExpireAt, when) || !x.S.expirable(v) {
			x.W.Int(0)
			return
		}
		if when <= x.Now() {
			_, err = x.Tx.Delete(x.DB, key)
		} else {
			v.ExpireAt = when
			err = x.Tx.Set(x.DB, key, v)
		}
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Int(1)
	}
}

// expirable reports whether EXPIRE/PERSIST may change v's deadline: a
// running ONCE record keeps its lease (change it with ONCE.EXTEND).
func (s *Server) expirable(v store.Value) bool {
	if s.KeepDeadline != nil {
		return !s.KeepDeadline(v)
	}
	return true
}

func ttlCmd(ms, absolute bool) Handler {
	return func(x *Ctx) {
		v, found, err := x.lookup(x.Args[1])
		switch {
		case err != nil:
			x.Fail(err)
			return
		case !found:
			x.W.Int(-2)
			return
		case v.ExpireAt == 0:
			x.W.Int(-1)
			return
		}
		t := v.ExpireAt
		if !absolute {
			t = max(t-x.Now(), 0)
		}
		if !ms {
			// (t+500)/1000, without overflowing near the maximum.
			t = t/1000 + (t%1000+500)/1000
		}
		x.W.Int(t)
	}
}

func persistCmd(x *Ctx) {
	v, found, err := x.Tx.Get(x.DB, x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !found || v.ExpireAt == 0 || !x.S.expirable(v) {
		x.W.Int(0)
		return
	}
	v.ExpireAt = 0
	if err := x.Tx.Set(x.DB, x.Args[1], v); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(1)
}

func typeCmd(x *Ctx) {
	v, found, err := x.lookup(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !found {
		x.W.Simple("none")
		return
	}
	x.W.Simple(v.Kind.String())
}

func keysCmd(x *Ctx) {
	pattern := x.Args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	var keys [][]byte
	err := x.Tx.Scan(x.DB, literalPrefix(pattern), func(k []byte, _ store.Value) (bool, error) {
		if all || globMatch(pattern, k) {
			keys = append(keys, bytes.Clone(k))
		}
		return prefixMayMatch(pattern, k), nil
	})
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Array(len(keys))
	for _, k := range keys {
		x.W.Bulk(k)
	}
}

// literalPrefix is the part of a glob pattern before its first special
// character: every match starts with it, so a scan can seek there.
func literalPrefix(p []byte) []byte {
	for i, c := range p {
		if c == '*' || c == '?' || c == '[' || c == '\\' {
			return p[:i]
		}
	}
	return p
}

// prefixMayMatch reports whether keys from k on (in byte order) may still
// match: false once k has left the pattern's literal prefix.
func prefixMayMatch(p, k []byte) bool {
	pre := literalPrefix(p)
	return bytes.HasPrefix(k, pre) || bytes.Compare(k, pre) < 0
}

// scanCursors maps SCAN cursors to the key where the next call resumes.
// Keys are visited in byte order, so a cursor names a key, not a bucket;
// the table keeps the most recent cursors.
type scanCursors struct {
	mu    sync.Mutex
	next  uint64
	keys  map[uint64][]byte
	order []uint64
}

const maxCursors = 1 << 16

func (c *scanCursors) put(key []byte) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = make(map[uint64][]byte)
		c.next = uint64(rand.Int64N(1<<40)) + 1
	}
	c.next++
	id := c.next
	c.keys[id] = key
	c.order = append(c.order, id)
	if len(c.order) > maxCursors {
		delete(c.keys, c.order[0])
		c.order = c.order[1:]
	}
	return id
}

func (c *scanCursors) get(id uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[id]
	return k, ok
}

// parseCursor reads a SCAN cursor as Redis does, with strtoul: "" is 0,
// a sign may lead ("+5" is 5, "-0" is 0, "-5" wraps around to 2^64-5),
// and anything else but decimal digits that fit 64 bits is refused.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := false
	digits := b
	switch b[0] {
	case '-':
		neg, digits = true, b[1:]
	case '+':
		digits = b[1:]
	}
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// scanOpts are the options of SCAN, HSCAN, SSCAN and ZSCAN, as Redis
// 7.0's scanGenericCommand reads them: COUNT (10 unless given, at least
// 1), MATCH (nil for "*", which matches everything), and SCAN's TYPE.
type scanOpts struct {
	count        int64
	pattern, typ []byte
}

// parseScanOpts reads the options after the cursor (withType: SCAN's,
// which takes TYPE).
func parseScanOpts(rest [][]byte, withType bool) (scanOpts, error) {
	o := scanOpts{count: 10}
	for ; len(rest) > 0; rest = rest[2:] {
		switch {
		case len(rest) < 2:
			return o, ErrSyntax
		case eq(rest[0], "count"):
			n, ok := parseInt(rest[1])
			if !ok {
				return o, ErrNotInteger
			}
			if n < 1 {
				return o, ErrSyntax
			}
			o.count = n
		case eq(rest[0], "match"):
			o.pattern = rest[1]
		case withType && eq(rest[0], "type"):
			o.typ = rest[1]
		default:
			return o, ErrSyntax
		}
	}
	if len(o.pattern) == 1 && o.pattern[0] == '*' {
		o.pattern = nil
	}
	return o, nil
}

// scanStart answers for HSCAN, SSCAN and ZSCAN once their key is looked
// up, as Redis 7.0 does: the lookup's error, or an empty scan for a
// missing key (whose options are not read), else the options; ok is false
// when it answered.
func (x *Ctx) scanStart(found bool, err error) (o scanOpts, ok bool) {
	switch {
	case err != nil:
		x.Fail(err)
	case !found:
		x.W.Array(2)
		x.W.BulkString("0")
		x.W.Array(0)
	default:
		if o, err = parseScanOpts(x.Args[3:], false); err != nil {
			x.Fail(err)
			return o, false
		}
		return o, true
	}
	return o, false
}

func scanCmd(x *Ctx) {
	cursor, ok := parseCursor(x.Args[1])
	if !ok {
		x.Fail(ErrCursor)
		return
	}
	o, err := parseScanOpts(x.Args[2:], true)
	if err != nil {
		x.Fail(err)
		return
	}
	count, pattern, typ := o.count, o.pattern, o.typ
	var from []byte
	if cursor != 0 {
		k, ok := x.S.cursors.get(cursor)
		if !ok {
			x.Fail(ErrCursor)
			return
		}
		from = k
	}
	var keys [][]byte
	var resume []byte
	visited := int64(0)
	err = x.Tx.Scan(x.DB, from, func(k []byte, v store.Value) (bool, error) {
		if visited == count {
			resume = bytes.Clone(k)
			return false, nil
		}
		visited++
		if pattern != nil && !globMatch(pattern, k) {
			return true, nil
		}
		if typ != nil && !eq(typ, v.Kind.String()) {
			return true, nil
		}
		keys = append(keys, bytes.Clone(k))
		return true, nil
	})
	if err != nil {
		x.Fail(err)
		return
	}
	next := uint64(0)
	if resume != nil {
		next = x.S.cursors.put(resume)
	}
	x.W.Array(2)
	x.W.BulkString(strconv.FormatUint(next, 10))
	x.W.Array(len(keys))
	for _, k := range keys {
		x.W.Bulk(k)
	}
}

func renameCmd(nx bool) Handler {
	return func(x *Ctx) {
		src, dst := x.Args[1], x.Args[2]
		v, found, err := x.Tx.Get(x.DB, src)
		if err != nil {
			x.Fail(err)
			return
		}
		if !found {
			x.Fail(ErrNoSuchKey)
			return
		}
		if bytes.Equal(src, dst) {
			if nx {
				x.W.Int(0)
			} else {
				x.W.OK()
			}
			return
		}
		if nx {
			if x.occupied(x.DB, dst) {
				return
			}
		}
		v.Data = bytes.Clone(v.Data)
		if _, err := x.Tx.Delete(x.DB, src); err != nil {
			x.Fail(err)
			return
		}
		if err := x.Tx.Set(x.DB, dst, v); err != nil {
			x.Fail(err)
			return
		}
		if nx {
			x.W.Int(1)
		} else {
			x.W.OK()
		}
	}
}

func randomkeyCmd(x *Ctx) {
	var start [4]byte
	for i := range start {
		start[i] = byte(rand.IntN(256))
	}
	var found []byte
	pick := func(k []byte, _ store.Value) (bool, error) {
		found = bytes.Clone(k)
		return false, nil
	}
	err := x.Tx.Scan(x.DB, start[:rand.IntN(len(start))+1], pick)
	if err == nil && found == nil {
		err = x.Tx.Scan(x.DB, nil, pick)
	}
	if err != nil {
		x.Fail(err)
		return
	}
	if found == nil {
		x.W.Null()
		return
	}
	x.W.Bulk(found)
}

// dbArg parses a database index as Redis's getIntFromObjectOrReply does:
// notInt answers a non-integer (and, when it is not nil, an integer out
// of the int range too), then an index outside the configured databases
// is ErrDBIndex. It writes the error reply and reports false on failure.
func (x *Ctx) dbArg(b []byte, notInt error) (int, bool) {
	n, ok := parseInt(b)
	switch {
	case !ok && notInt != nil:
		x.Fail(notInt)
	case !ok:
		x.Fail(ErrNotInteger)
	case n != int64(int32(n)) && notInt != nil:
		x.Fail(notInt)
	case n != int64(int32(n)):
		x.Fail(ErrIntRange)
	case n < 0 || n >= int64(x.S.store.Databases()):
		x.Fail(ErrDBIndex)
	default:
		return int(n), true
	}
	return 0, false
}

// copyArgs are COPY's options.
type copyArgs struct {
	db      int
	replace bool
}

// parseCopy reads COPY's options in order, as Redis does: the first bad
// one answers (a DB index is checked where it stands).
func (x *Ctx) parseCopy() (copyArgs, bool) {
	a := copyArgs{db: x.DB}
	for j := 3; j < len(x.Args); j++ {
		switch {
		case eq(x.Args[j], "replace"):
			a.replace = true
		case eq(x.Args[j], "db") && j+1 < len(x.Args):
			db, ok := x.dbArg(x.Args[j+1], nil)
			if !ok {
				return a, false
			}
			a.db = db
			j++
		default:
			x.Fail(ErrSyntax)
			return a, false
		}
	}
	return a, true
}

// copyCmd is COPY source destination [DB n] [REPLACE]: the copy keeps the
// source's deadline. A running ONCE record is not copied (ErrCopyRunning):
// its token would then hold two claims, and a COMPLETE would settle only
// one of them (KV-9, KV-13). A kept answer is copied as any value.
func copyCmd(x *Ctx) {
	a, ok := x.parseCopy()
	if !ok {
		return
	}
	src, dst := x.Args[1], x.Args[2]
	if a.db == x.DB && bytes.Equal(src, dst) {
		x.Fail(ErrSameObject)
		return
	}
	v, found, err := x.lookup(src)
	if err != nil {
		x.Fail(err)
		return
	}
	if !found {
		x.W.Int(0)
		return
	}
	if !x.S.expirable(v) {
		x.Fail(ErrCopyRunning)
		return
	}
	v.Data = bytes.Clone(v.Data)
	if !a.replace {
		if x.occupied(a.db, dst) {
			return
		}
	}
	if v, err = x.copyObj(a.db, dst, v); err != nil {
		x.Fail(err)
		return
	}
	if err := x.Tx.Set(a.db, dst, v); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(1)
}

// moveCmd is MOVE key db: the key goes whole, with its deadline, to db
// unless db has it. A ONCE record moves as RENAME moves it: a running
// claim keeps its token and lease in db, and the source's removal is a
// lapse there (its waiters take a new claim, KV-13).
func moveCmd(x *Ctx) {
	db, ok := x.dbArg(x.Args[2], nil)
	if !ok {
		return
	}
	if db == x.DB {
		x.Fail(ErrSameObject)
		return
	}
	key := x.Args[1]
	v, found, err := x.Tx.Get(x.DB, key)
	if err != nil {
		x.Fail(err)
		return
	}
	if !found {
		x.W.Int(0)
		return
	}
	v.Data = bytes.Clone(v.Data)
	if x.occupied(db, key) {
		return
	}
	if _, err := x.Tx.Delete(x.DB, key); err != nil {
		x.Fail(err)
		return
	}
	if err := x.Tx.Set(db, key, v); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(1)
}

// swapdbCmd is SWAPDB index1 index2: the two databases swap what they
// hold, at once, whatever their size (store.DBSwapper). As in Redis 7.0,
// it touches every watched key of either database that exists in either
// (WATCH), and a connection stays in the database it selected, now with
// the other's keys. A ONCE waiter keeps waiting on its key in its own
// database, where it finds what the other database held (once.Engine's
// Swapped): the run it waited on went whole to the other database, with
// its token, as MOVE takes it.
func swapdbCmd(x *Ctx) {
	// Both indexes are read before either is checked against databases,
	// as Redis 7.0 does: SWAPDB 16 x is an invalid second index, not an
	// index out of range.
	var ids [2]int
	for i, notInt := range []error{ErrFirstDB, ErrSecondDB} {
		n, ok := parseInt(x.Args[1+i])
		if !ok || n != int64(int32(n)) {
			x.Fail(notInt)
			return
		}
		ids[i] = int(n)
	}
	for _, id := range ids {
		if id < 0 || id >= x.S.store.Databases() {
			x.Fail(ErrDBIndex)
			return
		}
	}
	a, b := ids[0], ids[1]
	sw, ok := x.Tx.(store.DBSwapper)
	if !ok {
		x.Fail(ErrNoSwap)
		return
	}
	if err := sw.SwapDBs(a, b); err != nil {
		x.Fail(err)
		return
	}
	x.W.OK()
}

// objectCommands is OBJECT. The store keeps a string's bytes, not Redis's
// object for them, so ENCODING and REFCOUNT answer what Redis 7.0 has for
// a string stored by SET (objectEncoding); access times are not tracked,
// so IDLETIME answers 0 (a key just read) rather than slow every read
// down with a clock write; FREQ answers Redis's error, as maxmemory-policy
// is noeviction. OBJECT reads count as keyspace hits or misses, as in
// Redis, and change no key.
func objectCommands() *Command {
	sub := func(name string, run func(x *Ctx, v store.Value)) *Command {
		return &Command{Name: "object|" + name, Arity: 3, Flags: ReadOnly, FirstKey: 2, LastKey: 2,
			Categories: []string{"keyspace", "read", "slow"}, Run: func(x *Ctx) {
				v, found, err := x.lookup(x.Args[2])
				switch {
				case err != nil:
					x.Fail(err)
				case !found:
					x.W.Null()
				default:
					run(x, v)
				}
			}}
	}
	return &Command{Name: "object", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
		sub("encoding", func(x *Ctx, v store.Value) { x.W.BulkString(objectEncoding(v).name) }),
		sub("refcount", func(x *Ctx, v store.Value) { x.W.Int(objectEncoding(v).refcount) }),
		sub("idletime", func(x *Ctx, _ store.Value) { x.W.Int(0) }),
		sub("freq", func(x *Ctx, _ store.Value) { x.Fail(ErrNoLFU) }),
		{Name: "object|help", Arity: 2, Flags: Loading | Stale, Categories: []string{"keyspace", "slow"}, Run: objectHelp},
	}}
}

// encoding is what OBJECT ENCODING and REFCOUNT answer for a value.
type encoding struct {
	name     string
	refcount int64
}

// sharedRefcount is Redis's OBJ_SHARED_REFCOUNT, the refcount of its
// shared integers 0..9999 (OBJ_SHARED_INTEGERS), which SET stores when
// maxmemory is 0.
const sharedRefcount = math.MaxInt32

// objectEncoding is Redis 7.0's encoding of v as SET stores it
// (tryObjectEncoding): "int" for a canonical 64-bit integer of at most 20
// bytes, shared when it is 0..9999; "embstr" up to 44 bytes; "raw" above.
// Redis answers "raw" also for a short string that APPEND or SETRANGE
// grew in place, and "embstr" for an integer INCRBYFLOAT wrote, which are
// not told apart here. A hash is "listpack" or "hashtable" as its
// value says (hash.go); a set is Redis's intset or hashtable, as its
// value records (setcodec.go); a list is "quicklist". A ONCE record, which Redis
// has no encoding for, is "raw": the record's bytes.
func objectEncoding(v store.Value) encoding {
	switch v.Kind {
	case store.KindString:
	case store.KindList:
		return encoding{"quicklist", 1} // Redis 7.0's only list encoding
	case store.KindHash:
		if h, err := hashcodec.Decode(v.Data); v.Obj != 0 || (err == nil && h.Table) {
			return encoding{"hashtable", 1}
		}
		return encoding{"listpack", 1}
	case store.KindSet:
		// An object's Data is its count, whatever its first byte.
		if v.Obj == 0 && len(v.Data) > 0 && v.Data[0] == setTagIntset {
			return encoding{"intset", 1}
		}
		return encoding{"hashtable", 1}
	case store.KindZSet:
		if len(v.Data) > 0 && v.Data[0] == zcodec.Skiplist {
			return encoding{"skiplist", 1}
		}
		return encoding{"listpack", 1}
	default:
		return encoding{"raw", 1}
	}
	if len(v.Data) <= 20 {
		if n, ok := parseInt(v.Data); ok {
			if n >= 0 && n < 10000 {
				return encoding{"int", sharedRefcount}
			}
			return encoding{"int", 1}
		}
	}
	if len(v.Data) <= 44 {
		return encoding{"embstr", 1}
	}
	return encoding{"raw", 1}
}

func objectHelp(x *Ctx) {
	lines := []string{
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
		"HELP",
		"    Prints this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// occupied reports whether key exists in db, having answered :0 (or the
// error when the read failed): the answer of RENAMENX, COPY and MOVE to a
// destination that holds a key.
func (x *Ctx) occupied(db int, key []byte) bool {
	_, exists, err := x.Tx.Get(db, key)
	if err != nil {
		x.Fail(err)
		return true
	}
	if exists {
		x.W.Int(0)
		return true
	}
	return false
}
