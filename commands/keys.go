package commands

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

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

func scanCmd(x *Ctx) {
	cursor, ok := parseCursor(x.Args[1])
	if !ok {
		x.Fail(ErrCursor)
		return
	}
	var err error
	count := int64(10)
	var pattern, typ []byte
	rest := x.Args[2:]
	for len(rest) > 0 {
		if len(rest) < 2 {
			x.Fail(ErrSyntax)
			return
		}
		switch {
		case eq(rest[0], "count"):
			n, ok := parseInt(rest[1])
			if !ok {
				x.Fail(ErrNotInteger)
				return
			}
			if n < 1 {
				x.Fail(ErrSyntax)
				return
			}
			count = n
		case eq(rest[0], "match"):
			pattern = rest[1]
		case eq(rest[0], "type"):
			typ = rest[1]
		default:
			x.Fail(ErrSyntax)
			return
		}
		rest = rest[2:]
	}
	if len(pattern) == 1 && pattern[0] == '*' {
		pattern = nil
	}
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
			_, exists, err := x.Tx.Get(x.DB, dst)
			if err != nil {
				x.Fail(err)
				return
			}
			if exists {
				x.W.Int(0)
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
