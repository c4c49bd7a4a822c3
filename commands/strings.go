package commands

import (
	"math"
	"math/big"
	"strconv"

	"github.com/oncekv/oncekv/store"
)

// maxBulk is proto-max-bulk-len's default: the largest string a command
// may build (Config.ProtoMaxBulkLen).
const maxBulk = 512 << 20

func stringCommands() []*Command {
	w, r := Write|DenyOOM|Borrows, ReadOnly|Borrows
	cat := func(c ...string) []string { return append([]string{"write", "string"}, c...) }
	rcat := func(c ...string) []string { return append([]string{"read", "string"}, c...) }
	return []*Command{
		{Name: "get", Arity: 2, Flags: r | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: rcat("fast"), Run: getCmd},
		{Name: "set", Arity: -3, Flags: w | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("slow"), Run: setCmd},
		{Name: "setnx", Arity: 3, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: setnxCmd},
		{Name: "setex", Arity: 4, Flags: w | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("slow"), Run: setexCmd(1000)},
		{Name: "psetex", Arity: 4, Flags: w | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("slow"), Run: setexCmd(1)},
		{Name: "getset", Arity: 3, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: getsetCmd},
		{Name: "getdel", Arity: 2, Flags: Write | Fast | Borrows | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: getdelCmd},
		{Name: "getex", Arity: -2, Flags: Write | Fast | Borrows | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: getexCmd},
		{Name: "mget", Arity: -2, Flags: r | Fast, FirstKey: 1, LastKey: -1, Categories: rcat("fast"), Run: mgetCmd},
		{Name: "mset", Arity: -3, Flags: w, FirstKey: 1, LastKey: -1, Step: 2, Categories: cat("slow"), Run: msetCmd},
		{Name: "msetnx", Arity: -3, Flags: w, FirstKey: 1, LastKey: -1, Step: 2, Categories: cat("slow"), Run: msetnxCmd},
		{Name: "append", Arity: 3, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: appendCmd},
		{Name: "strlen", Arity: 2, Flags: r | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: rcat("fast"), Run: strlenCmd},
		{Name: "getrange", Arity: 4, Flags: r | Prefetch, FirstKey: 1, LastKey: 1, Categories: rcat("slow"), Run: getrangeCmd},
		{Name: "substr", Arity: 4, Flags: r | Prefetch, FirstKey: 1, LastKey: 1, Categories: rcat("slow"), Run: getrangeCmd},
		{Name: "lcs", Arity: -3, Flags: r, FirstKey: 1, LastKey: 2, Categories: rcat("slow"), Run: lcsCmd},
		{Name: "setrange", Arity: 4, Flags: w | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("slow"), Run: setrangeCmd},
		{Name: "incr", Arity: 2, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: incrCmd(1, false)},
		{Name: "decr", Arity: 2, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: incrCmd(-1, false)},
		{Name: "incrby", Arity: 3, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: incrCmd(1, true)},
		{Name: "decrby", Arity: 3, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: incrCmd(-1, true)},
		{Name: "incrbyfloat", Arity: 3, Flags: w | Fast | Prefetch, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: incrbyfloatCmd},
	}
}

// getString reads a string key: ok is false when it is missing; a key of
// another kind is ErrWrongType.
func (x *Ctx) getString(key []byte) (store.Value, bool, error) {
	v, ok, err := x.Tx.Get(x.DB, key)
	if err != nil || !ok {
		return v, false, err
	}
	if v.Kind != store.KindString {
		return v, false, ErrWrongType
	}
	return v, true, nil
}

func getCmd(x *Ctx) {
	v, ok, err := x.readString(x.Args[1])
	switch {
	case err != nil:
		x.Fail(err)
	case !ok:
		x.W.Null()
	default:
		x.W.Bulk(v.Data)
	}
}

// setOpts are the options of SET and GETEX.
type setOpts struct {
	nx, xx, get, keepTTL, persist bool
	unit                          int64 // 1000 for EX/EXAT, 1 for PX/PXAT
	absolute                      bool  // EXAT/PXAT
	expire                        []byte
}

// parseSetOpts parses SET's (getex false) or GETEX's options, with the
// exclusions Redis enforces.
func parseSetOpts(args [][]byte, getex bool) (setOpts, error) {
	var o setOpts
	hasExpire := func() bool { return o.expire != nil }
	for j := 0; j < len(args); j++ {
		a := args[j]
		var next []byte
		if j+1 < len(args) {
			next = args[j+1]
		}
		switch {
		case eq(a, "nx") && !o.xx && !getex:
			o.nx = true
		case eq(a, "xx") && !o.nx && !getex:
			o.xx = true
		case eq(a, "get") && !getex:
			o.get = true
		case eq(a, "keepttl") && !o.persist && !hasExpire() && !getex:
			o.keepTTL = true
		case eq(a, "persist") && getex && !hasExpire() && !o.keepTTL:
			o.persist = true
		case (eq(a, "ex") || eq(a, "px") || eq(a, "exat") || eq(a, "pxat")) &&
			!o.keepTTL && !o.persist && next != nil && (!hasExpire() || o.sameExpire(a)):
			o.unit = 1
			if a[0] == 'e' || a[0] == 'E' {
				o.unit = 1000
			}
			o.absolute = len(a) == 4
			o.expire = next
			j++
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

// sameExpire reports whether a names the expiry option already given
// (repeating the same one is allowed; mixing them is not).
func (o setOpts) sameExpire(a []byte) bool {
	unit := int64(1)
	if a[0] == 'e' || a[0] == 'E' {
		unit = 1000
	}
	return unit == o.unit && o.absolute == (len(a) == 4)
}

// deadline converts the expiry option to Unix ms, as Redis validates it.
func (o setOpts) deadline(now int64, cmd string) (int64, error) {
	n, ok := parseInt(o.expire)
	if !ok {
		return 0, ErrNotInteger
	}
	return expireDeadline(n, o.unit, o.absolute, now, cmd)
}

// expireDeadline validates a SET-style expiry (positive, no overflow).
func expireDeadline(n, unit int64, absolute bool, now int64, cmd string) (int64, error) {
	if n <= 0 || (unit == 1000 && n > math.MaxInt64/1000) {
		return 0, invalidExpire(cmd)
	}
	n *= unit
	if !absolute {
		n += now
	}
	if n <= 0 {
		return 0, invalidExpire(cmd)
	}
	return n, nil
}

func invalidExpire(cmd string) error {
	return errorf("ERR invalid expire time in '%s' command", cmd)
}

func setCmd(x *Ctx) {
	o, err := parseSetOpts(x.Args[3:], false)
	if err != nil {
		x.Fail(err)
		return
	}
	var at int64
	if o.expire != nil {
		if at, err = o.deadline(x.Now(), "set"); err != nil {
			x.Fail(err)
			return
		}
	}
	key := x.Args[1]
	old, found, err := x.Tx.Get(x.DB, key)
	if err != nil {
		x.Fail(err)
		return
	}
	if o.get {
		x.countLookup(found) // SET … GET reads as GET does
		if found && old.Kind != store.KindString {
			x.Fail(ErrWrongType)
			return
		}
		if found {
			x.W.Bulk(old.Data)
		} else {
			x.W.Null()
		}
	}
	if (o.nx && found) || (o.xx && !found) {
		if !o.get {
			x.W.Null()
		}
		return
	}
	if o.keepTTL && found {
		at = old.ExpireAt
	}
	if at != 0 && at <= x.Now() {
		// A deadline already past: the key is gone at once (Redis 7).
		deleted, err := x.Tx.Delete(x.DB, key)
		if err != nil {
			x.Fail(err)
			return
		}
		if !deleted {
			// Nothing was there, and nothing is: a write all the same
			// to whoever WATCHes the key, as Redis's setKey signals it.
			x.touchWatched(key)
		}
		if !o.get {
			x.W.OK()
		}
		return
	}
	if err := x.Tx.Set(x.DB, key, store.Value{Kind: store.KindString, Data: x.Args[2], ExpireAt: at}); err != nil {
		x.Fail(err)
		return
	}
	if !o.get {
		x.W.OK()
	}
}

func setnxCmd(x *Ctx) {
	_, found, err := x.Tx.Get(x.DB, x.Args[1])
	if err == nil && !found {
		err = x.Tx.Set(x.DB, x.Args[1], store.Value{Kind: store.KindString, Data: x.Args[2]})
	}
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(b2i(!found))
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func setexCmd(unit int64) Handler {
	return func(x *Ctx) {
		n, ok := x.intArg(2)
		if !ok {
			return
		}
		at, err := expireDeadline(n, unit, false, x.Now(), x.Cmd.Name)
		if err != nil {
			x.Fail(err)
			return
		}
		if err := x.Tx.Set(x.DB, x.Args[1], store.Value{Kind: store.KindString, Data: x.Args[3], ExpireAt: at}); err != nil {
			x.Fail(err)
			return
		}
		x.W.OK()
	}
}

func getsetCmd(x *Ctx) {
	v, found, err := x.readString(x.Args[1])
	if err == nil {
		err = x.Tx.Set(x.DB, x.Args[1], store.Value{Kind: store.KindString, Data: x.Args[2]})
	}
	if err != nil {
		x.Fail(err)
		return
	}
	if found {
		x.W.Bulk(v.Data)
	} else {
		x.W.Null()
	}
}

func getdelCmd(x *Ctx) {
	v, found, err := x.readString(x.Args[1])
	if err == nil && found {
		_, err = x.Tx.Delete(x.DB, x.Args[1])
	}
	if err != nil {
		x.Fail(err)
		return
	}
	if found {
		x.W.Bulk(v.Data)
	} else {
		x.W.Null()
	}
}

func getexCmd(x *Ctx) {
	o, err := parseSetOpts(x.Args[2:], true)
	if err != nil {
		x.Fail(err)
		return
	}
	key := x.Args[1]
	v, found, err := x.readString(key)
	if err != nil {
		x.Fail(err)
		return
	}
	if !found {
		x.W.Null()
		return
	}
	var at int64
	if o.expire != nil {
		if at, err = o.deadline(x.Now(), "getex"); err != nil {
			x.Fail(err)
			return
		}
	}
	data := v.Data
	switch {
	case o.expire != nil && o.absolute && at <= x.Now():
		_, err = x.Tx.Delete(x.DB, key)
	case o.expire != nil:
		v.ExpireAt = at
		err = x.Tx.Set(x.DB, key, v)
	case o.persist && v.ExpireAt != 0:
		v.ExpireAt = 0
		err = x.Tx.Set(x.DB, key, v)
	}
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Bulk(data)
}

func mgetCmd(x *Ctx) {
	keys := x.Args[1:]
	x.W.Array(len(keys))
	for len(keys) > 0 {
		// Each run of keys is prefetched before it is read, as a
		// pipeline's are (Server.Ahead).
		run := keys[:min(len(keys), mgetRun)]
		keys = keys[len(run):]
		if p := x.S.prefetcher; p != nil && len(run) > 1 {
			p.Prefetch(x.DB, run)
		}
		for _, k := range run {
			v, ok, err := x.lookup(k)
			if err != nil || !ok || v.Kind != store.KindString {
				x.W.Null()
				continue
			}
			x.W.Bulk(v.Data)
		}
	}
}

// mgetRun is how many of its keys MGET prefetches at once.
const mgetRun = 16

func msetCmd(x *Ctx) {
	if len(x.Args)%2 != 1 {
		x.W.Error("ERR wrong number of arguments for '" + x.Cmd.Name + "' command")
		return
	}
	if msetWrite(x) {
		x.W.OK()
	}
}

// msetWrite writes MSET's pairs, or answers the error that stopped it.
func msetWrite(x *Ctx) bool {
	for i := 2; i < len(x.Args); i += 2 {
		if len(x.Args[i]) > store.MaxValueLen {
			// Refused before the first key is written: an MSET writes
			// all its keys or none.
			x.Fail(store.ErrValueTooLong)
			return false
		}
	}
	for i := 1; i < len(x.Args); i += 2 {
		if err := x.Tx.Set(x.DB, x.Args[i], store.Value{Kind: store.KindString, Data: x.Args[i+1]}); err != nil {
			x.Fail(err)
			return false
		}
	}
	return true
}

func msetnxCmd(x *Ctx) {
	if len(x.Args)%2 != 1 {
		x.W.Error("ERR wrong number of arguments for '" + x.Cmd.Name + "' command")
		return
	}
	for i := 1; i < len(x.Args); i += 2 {
		_, found, err := x.Tx.Get(x.DB, x.Args[i])
		if err != nil {
			x.Fail(err)
			return
		}
		if found {
			x.W.Int(0)
			return
		}
	}
	if msetWrite(x) {
		x.W.Int(1)
	}
}

func appendCmd(x *Ctx) {
	v, found, err := x.getString(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	add := x.Args[2]
	if int64(len(v.Data)+len(add)) > x.S.protoMaxBulkLen() {
		x.Fail(ErrStringTooBig)
		return
	}
	if !found {
		v = store.Value{Kind: store.KindString}
	}
	data := make([]byte, 0, len(v.Data)+len(add))
	data = append(append(data, v.Data...), add...)
	v.Data = data
	if err := x.Tx.Set(x.DB, x.Args[1], v); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(data)))
}

func strlenCmd(x *Ctx) {
	v, _, err := x.readString(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(v.Data)))
}

func getrangeCmd(x *Ctx) {
	start, ok := x.intArg(2)
	if !ok {
		return
	}
	end, ok := x.intArg(3)
	if !ok {
		return
	}
	v, found, err := x.readString(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !found {
		x.W.BulkString("")
		return
	}
	n := int64(len(v.Data))
	if start < 0 && end < 0 && start > end {
		x.W.BulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		x.W.BulkString("")
		return
	}
	x.W.Bulk(v.Data[start : end+1])
}

func setrangeCmd(x *Ctx) {
	off, ok := x.intArg(2)
	if !ok {
		return
	}
	if off < 0 {
		x.Fail(ErrOffsetRange)
		return
	}
	val := x.Args[3]
	v, found, err := x.getString(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if len(val) == 0 {
		x.W.Int(int64(len(v.Data)))
		return
	}
	if off > x.S.protoMaxBulkLen()-int64(len(val)) {
		x.Fail(ErrStringTooBig)
		return
	}
	if !found {
		v = store.Value{Kind: store.KindString}
	}
	size := max(int64(len(v.Data)), off+int64(len(val)))
	data := make([]byte, size)
	copy(data, v.Data)
	copy(data[off:], val)
	v.Data = data
	if err := x.Tx.Set(x.DB, x.Args[1], v); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(size)
}

// incrCmd is INCR/DECR (by sign) and INCRBY/DECRBY (withArg).
func incrCmd(sign int64, withArg bool) Handler {
	return func(x *Ctx) {
		by := sign
		if withArg {
			n, ok := x.intArg(2)
			if !ok {
				return
			}
			if sign < 0 {
				if n == math.MinInt64 {
					x.W.Error("ERR decrement would overflow")
					return
				}
				n = -n
			}
			by = n
		}
		v, found, err := x.getString(x.Args[1])
		if err != nil {
			x.Fail(err)
			return
		}
		var cur int64
		if found {
			n, ok := parseInt(v.Data)
			if !ok {
				x.Fail(ErrNotInteger)
				return
			}
			cur = n
		}
		if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
			x.Fail(ErrOverflow)
			return
		}
		cur += by
		v.Kind = store.KindString
		// Set keeps no reference to v.Data (store.Tx): the digits can
		// be written in the context's own buffer.
		v.Data = strconv.AppendInt(x.digits[:0], cur, 10)
		if err := x.Tx.Set(x.DB, x.Args[1], v); err != nil {
			x.Fail(err)
			return
		}
		x.W.Int(cur)
	}
}

func incrbyfloatCmd(x *Ctx) {
	v, found, err := x.getString(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	cur := new(big.Float).SetPrec(ldPrec)
	if found {
		var ok bool
		if cur, ok = parseLongDouble(v.Data); !ok {
			x.Fail(ErrNotFloat)
			return
		}
	}
	by, ok := parseLongDouble(x.Args[2])
	if !ok {
		x.Fail(ErrNotFloat)
		return
	}
	sum, ok := addLongDouble(cur, by)
	if !ok {
		x.Fail(ErrIncrNaN)
		return
	}
	v.Kind = store.KindString
	v.Data = []byte(formatLongDouble(sum))
	if err := x.Tx.Set(x.DB, x.Args[1], v); err != nil {
		x.Fail(err)
		return
	}
	x.W.Bulk(v.Data)
}
