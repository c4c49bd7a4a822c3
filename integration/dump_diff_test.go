package integration

import (
	"fmt"
	"hash/crc64"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// DUMP and RESTORE of strings, compared with redis-server 7.0 (README,
// "Supported commands"). DUMP writes what Redis writes
// with `rdbcompression no`, so the scripts compare DUMP byte for byte
// with such a Redis; TestDumpCrossRestore moves values both ways with
// Redis's default, LZF-compressed payloads.

// dumpShapes are values whose payloads take every path of the encoding:
// the integer encodings and their boundaries, strings that only look
// like integers, the length encodings' boundaries, the 20 bytes past
// which Redis compresses, compressible and incompressible long values,
// binary.
func dumpShapes() []string {
	noise := make([]byte, 4096)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	return []string{
		"", "0", "1", "-1", "127", "128", "-128", "-129", "255", "256", "32767", "32768",
		"-32768", "-32769", "65536", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"4294967296", maxInt64, minInt64, overMax, underMin,
		"01", "-0", "+1", " 1", "1 ", "1.5", "1e3", "0x10", "12\x00", binary,
		"12345678901234567890", "123456789012345678901", strings.Repeat("a", 20), strings.Repeat("a", 21),
		strings.Repeat("x", 63), strings.Repeat("x", 64), strings.Repeat("ab", 1<<13-1), strings.Repeat("ab", 1<<13),
		"héllo wörld ✓ " + strings.Repeat("é", 40), mib, string(noise),
	}
}

// rdbPayload frames an RDB object as DUMP does: the object, the RDB
// version, and Redis's CRC-64 (Jones, reflected, no inversion) of both,
// little endian.
func rdbPayload(object string, version uint16) string {
	b := append([]byte(object), byte(version), byte(version>>8))
	crc := ^crc64.Update(^uint64(0), crc64.MakeTable(0x95ac9329ac4bc9b5), b)
	for i := 0; i < 64; i += 8 {
		b = append(b, byte(crc>>i))
	}
	return string(b)
}

func TestDiffDumpRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	noCompression(t, p)
	p.RunScripts(t, dumpScripts())
}

func dumpScripts() []Script {
	var shapes []Step
	for i, v := range dumpShapes() {
		k := fmt.Sprint("k", i)
		shapes = append(shapes, cmd("SET", k, v), cmd("DUMP", k))
	}
	abc := rdbPayload("\x00\x03abc", 10)
	obj := func(o string) string { return rdbPayload(o, 10) }
	var payloads []Step
	for _, pl := range []string{
		"", "x", "\x00\x01a\n\x00\x00\x00\x00", // shorter than a footer
		obj("\x00\x01a")[:13] + "\x00", // wrong checksum
		rdbPayload("\x00\x01a", 0), rdbPayload("\x00\x01a", 9), rdbPayload("\x00\x01a", 11), rdbPayload("\x00\x01a", 0xffff),
		obj(""), obj("\x08\x01a"), obj("\x15\x01a"), obj("\x00"),
		obj("\x00\xc0\x80"), obj("\x00\xc1\x00\x80"), obj("\x00\xc2\xff\xff\xff\x7f"), obj("\x00\xc2\x00\x00\x00\x80"),
		obj("\x00\xc0"), obj("\x00\xc2"), obj("\x00\x0cab"), obj("\x00\x0dab"), // read into the footer, or past it
		obj("\x00\x40\x03abc"), obj("\x00\x80\x00\x00\x00\x03abc"), obj("\x00\x81\x00\x00\x00\x00\x00\x00\x00\x03abc"),
		obj("\x00\x81\xff\xff\xff\xff\xff\xff\xff\xff"), obj("\x00\x82\x00"), obj("\x00\xbf"), obj("\x00\xc4"), obj("\x00\xff"),
		obj("\x00\x01abcdef"), obj("\x00\x3fabc"),
		obj("\x00\xc3\x05\x05\x01ab\x20\x01"), obj("\x00\xc3\xc5\x05\x01ab\x20\x01"), obj("\x00\xc3\x05\xc5\x01ab\x20\x01"),
		obj("\x00\xc3\x05\x06\x01ab\x20\x01"), obj("\x00\xc3\x05\x04\x01ab\x20\x01"),
		obj("\x00\xc3\x02\x00\x01ab"), obj("\x00\xc3\x00\x00"), obj("\x00\xc3\x00\x01"),
		obj("\x00\xc3\x02\x05\x20\x05"), obj("\x00\xc3\x02\x05\x05a"), obj("\x00\xc3\x03\x7f\xff\x00a\xe0"),
		obj("\x00\xc3\x04\x0b\x00a\xe0\x02\x00"), obj("\x00\xc3\x03\x0a\x00a\xe0\x02"),
	} {
		payloads = append(payloads, cmd("DEL", "r"), cmd("RESTORE", "r", "0", pl), cmd("GET", "r"))
	}
	return []Script{
		{"dump-shapes", shapes},
		{"dump-made-by-other-commands", []Step{
			cmd("SET", "c", "2147483646"), cmd("INCR", "c"), cmd("DUMP", "c"), cmd("INCR", "c"), cmd("DUMP", "c"),
			cmd("APPEND", "a", "12"), cmd("APPEND", "a", "3"), cmd("DUMP", "a"),
			cmd("INCRBYFLOAT", "f", "1.0"), cmd("DUMP", "f"), cmd("INCRBYFLOAT", "f", "0.5"), cmd("DUMP", "f"),
			cmd("SETRANGE", "s", "2", "7"), cmd("DUMP", "s"), cmd("MSET", "m", "-5", "n", "x"), cmd("DUMP", "m"),
			cmd("SET", "e", "42", "EX", "100"), cmd("DUMP", "e"),
			cmd("DUMP", "nokey"), cmd("DUMP"), cmd("DUMP", "a", "b"), cmd("dump", "a"),
		}},
		{"restore-payloads", payloads},
		{"restore-rules", []Step{
			cmd("SET", "k", "v"),
			// An existing key is refused before the TTL or payload is read;
			// the options are read before that.
			cmd("RESTORE", "k", "0", abc), cmd("RESTORE", "k", "x", "junk"), cmd("RESTORE", "k", "0", abc, "NOPE"),
			cmd("RESTORE", "n", "x", abc), cmd("RESTORE", "n", "-1", abc), cmd("RESTORE", "n", "0", "junk"),
			cmd("RESTORE", "n", "1.5", abc), cmd("EXISTS", "n"),
			cmd("RESTORE", "k", "0", abc, "REPLACE"), cmd("GET", "k"), cmd("TTL", "k"),
			cmd("RESTORE", "t", "100000", abc), approx(1, "TTL", "t"),
			cmd("RESTORE", "t", "0", abc, "replace"), cmd("TTL", "t"),
			cmd("RESTORE", "a", "0", abc, "ABSTTL"), cmd("TTL", "a"),
			cmd("RESTORE", "b", farFutureMs, abc, "ABSTTL"), cmd("PEXPIRETIME", "b"),
			// A deadline past: OK, and no key (REPLACE removes the old one).
			cmd("RESTORE", "c", "1", abc, "ABSTTL"), cmd("EXISTS", "c"),
			cmd("RESTORE", "k", "1", abc, "ABSTTL", "REPLACE"), cmd("EXISTS", "k"),
			cmd("RESTORE", "d", maxInt64, abc), cmd("EXISTS", "d"),
			cmd("RESTORE", "e", maxInt64, abc, "ABSTTL"), cmd("PEXPIRETIME", "e"),
			cmd("RESTORE", "f", "0", abc, "IDLETIME", "10", "REPLACE"), cmd("RESTORE", "f", "0", abc, "REPLACE", "FREQ", "5"),
			cmd("RESTORE", "f", "0", abc, "REPLACE", "IDLETIME", "1", "IDLETIME", "2"),
			cmd("RESTORE", "f", "0", abc, "REPLACE", "IDLETIME", "-1"), cmd("RESTORE", "f", "0", abc, "REPLACE", "FREQ", "256"),
			cmd("RESTORE", "f", "0", abc, "REPLACE", "FREQ", "-1"), cmd("RESTORE", "f", "0", abc, "REPLACE", "FREQ", "x"),
			cmd("RESTORE", "f", "0", abc, "REPLACE", "IDLETIME", "1", "FREQ", "1"),
			cmd("RESTORE", "f", "0", abc, "REPLACE", "FREQ", "1", "IDLETIME", "1"),
			cmd("RESTORE", "f", "0", abc, "REPLACE", "IDLETIME"), cmd("RESTORE", "f", "0", abc, "REPLACE", "REPLACE", "ABSTTL", "absttl"),
			cmd("RESTORE", "g", "0", "junk", "FREQ", "300"),
			cmd("RESTORE"), cmd("RESTORE", "k", "0"), cmd("restore", "lower", "0", abc),
			cmd("DBSIZE"), sorted("KEYS", "*"),
		}},
		{"restore-watch", []Step{
			cmd("SET", "w", "1"), cmd("WATCH", "w"), cmd("RESTORE", "w", "0", abc, "REPLACE").On(1),
			cmd("MULTI"), cmd("GET", "w"), cmd("EXEC"),
			// Refused, or nothing there and nothing made: no write.
			cmd("WATCH", "w", "x"), cmd("RESTORE", "w", "0", abc).On(1), cmd("RESTORE", "x", "1", abc, "ABSTTL").On(1),
			cmd("MULTI"), cmd("GET", "w"), cmd("EXEC"),
			// A deadline past removed the key: a write.
			cmd("WATCH", "w"), cmd("RESTORE", "w", "1", abc, "ABSTTL", "REPLACE").On(1),
			cmd("MULTI"), cmd("GET", "w"), cmd("EXEC"),
		}},
		// Redis 7.0's flags, categories, tips and key specs.
		{"dump-restore-command-info", []Step{
			cmd("COMMAND", "INFO", "dump", "restore"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "restore", "k", "0", "x", "REPLACE"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "dump", "k"),
		}},
		{"restore-multi", []Step{
			cmd("MULTI"), cmd("RESTORE", "m", "0", abc), cmd("RESTORE", "m", "0", abc), cmd("DUMP", "m"),
			cmd("RESTORE", "m", "0", "junk", "REPLACE"), cmd("GET", "m"), cmd("EXEC"),
			cmd("MULTI"), cmd("RESTORE", "m"), cmd("EXEC"),
		}},
	}
}

// Values move both ways: oncekv RESTOREs what redis-server DUMPs with its
// default compression, and redis-server RESTOREs what oncekv DUMPs.
func TestDumpCrossRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	r, o := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	bulk := func(c *RawConn, args ...string) string {
		t.Helper()
		f := c.ReadFrameAfterDo(t, args...)
		if f.Type != '$' || f.Null {
			t.Fatalf("%s: %s: %q, want a string", c.Addr, fmtArgs(args), f.Raw)
		}
		return f.Str
	}
	ok := func(c *RawConn, args ...string) {
		t.Helper()
		if got := c.Do(args...); string(got) != "+OK\r\n" {
			t.Fatalf("%s: %.200s: %q", c.Addr, fmtArgs(args), got)
		}
	}
	compressed := 0
	for i, v := range dumpShapes() {
		k := fmt.Sprint("k", i)
		ok(r, "SET", k, v)
		ok(o, "SET", k, v)
		fromRedis, fromOncekv := bulk(r, "DUMP", k), bulk(o, "DUMP", k)
		if fromRedis[1] == 0xc3 {
			compressed++ // an LZF string
		}
		ok(o, "RESTORE", k+":from-redis", "100000", fromRedis)
		ok(r, "RESTORE", k+":from-oncekv", "100000", fromOncekv)
		if got := bulk(o, "GET", k+":from-redis"); got != v {
			t.Errorf("oncekv RESTOREd redis's DUMP %.60q of %.60q as %.60q", fromRedis, v, got)
		}
		if got := bulk(r, "GET", k+":from-oncekv"); got != v {
			t.Errorf("redis RESTOREd oncekv's DUMP %.60q of %.60q as %.60q", fromOncekv, v, got)
		}
		for _, c := range []*RawConn{r, o} {
			from := "redis"
			if c == r {
				from = "oncekv"
			}
			f := c.ReadFrameAfterDo(t, "PTTL", k+":from-"+from)
			if ms, err := strconv.Atoi(f.Str); f.Type != ':' || err != nil || ms <= 0 || ms > 100000 {
				t.Errorf("%s: PTTL of a key RESTOREd with 100000 ms: %q", c.Addr, f.Raw)
			}
		}
	}
	if compressed < 3 {
		t.Errorf("redis-server compressed %d of the values: the LZF path was not taken", compressed)
	}
}

// What oncekv cannot hold it refuses: another type's payload (than a
// string, hash, set, list or sorted set) with Redis's
// error for a payload it cannot load, and no key; a ONCE record is not
// dumped (no Redis could restore it) and RESTORE never makes one.
func TestRestoreRefusesWhatItCannotHold(t *testing.T) {
	t.Parallel()
	r, o := DialRaw(t, StartRedis(t)), DialRaw(t, onceServer(t))
	for _, setup := range [][]string{
		{"XADD", "x", "*", "f", "v"},
		// (PFADD's HyperLogLog is a string: it is restored as one;
		// hashes, sets, lists and sorted sets are restored too:
		// hash_diff_test.go, TestSetDumpCrossRestore, list_diff_test.go,
		// zset_dump_diff_test.go.)
	} {
		r.Do("DEL", "x")
		r.Do(setup...)
		payload := r.ReadFrameAfterDo(t, "DUMP", "x").Str
		for _, args := range [][]string{{"RESTORE", "x", "0", payload}, {"RESTORE", "x", "0", payload, "REPLACE"}} {
			if got := string(o.Do(args...)); got != "-ERR Bad data format\r\n" {
				t.Errorf("RESTORE of %s's DUMP: %q, want -ERR Bad data format", setup[0], got)
			}
		}
		if got := string(o.Do("EXISTS", "x")); got != ":0\r\n" {
			t.Errorf("after a refused RESTORE of %s's DUMP, EXISTS: %q", setup[0], got)
		}
	}
	abc := rdbPayload("\x00\x03abc", 10)
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"ONCE.CLAIM", "o"}, "*2\r\n$7\r\nclaimed\r\n:"},
		{[]string{"DUMP", "o"}, "-ERR DUMP of a ONCE record (TYPE once) is not supported: no Redis server could restore it\r\n"},
		{[]string{"RESTORE", "o", "0", abc}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]string{"TYPE", "o"}, "+once\r\n"},
		{[]string{"RESTORE", "o", "0", abc, "REPLACE"}, "+OK\r\n"},
		{[]string{"TYPE", "o"}, "+string\r\n"},
		{[]string{"GET", "o"}, "$3\r\nabc\r\n"},
	} {
		if got := string(o.Do(st.args...)); !strings.HasPrefix(got, st.want) {
			t.Errorf("%s: %q, want %q", fmtArgs(st.args), got, st.want)
		}
	}
}

// A RESTOREd key is as durable as any write (KV-6): acknowledged under
// appendfsync always, it survives kill -9 with its value and deadline,
// and a key RESTORE … REPLACE removed (a deadline past) stays removed.
func TestRestoreSurvivesKill(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t, "--appendfsync", "always")
	c := DialRaw(t, o.Addr)
	lzf := "\x00\xc3\t\x1e\x01xx\xe0\x11\x00\x01xx\n\x00\xf0g?\xdf \x01\xeb\x95" // Redis 7.0's DUMP of 30 x
	for _, args := range [][]string{
		{"RESTORE", "plain", "0", rdbPayload("\x00\x05hello", 10)},
		{"RESTORE", "lzf", "0", lzf},
		{"RESTORE", "ttl", farFutureMs, rdbPayload("\x00\xc0\x07", 10), "ABSTTL"},
		{"SET", "gone", "v"},
		{"RESTORE", "gone", "1", lzf, "ABSTTL", "REPLACE"},
	} {
		if got := string(c.Do(args...)); got != "+OK\r\n" {
			t.Fatalf("%s: %q", fmtArgs(args), got)
		}
	}
	o.Kill(t)
	o = o.Restart(t)
	c = DialRaw(t, o.Addr)
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "plain"}, "$5\r\nhello\r\n"},
		{[]string{"GET", "lzf"}, "$30\r\n" + strings.Repeat("x", 30) + "\r\n"},
		{[]string{"GET", "ttl"}, "$1\r\n7\r\n"},
		{[]string{"PEXPIRETIME", "ttl"}, ":" + farFutureMs + "\r\n"},
		{[]string{"EXISTS", "gone"}, ":0\r\n"},
		{[]string{"DBSIZE"}, ":3\r\n"},
	} {
		if got := string(c.Do(st.args...)); got != st.want {
			t.Errorf("after kill -9 and a restart, %s: %q, want %q", fmtArgs(st.args), got, st.want)
		}
	}
}

// noCompression sets rdbcompression no on the pair's redis-servers (one,
// or two when the pair compares two of them), so that their DUMP payloads
// are uncompressed, as oncekv's always are.
func noCompression(tb testing.TB, p *DiffPair) {
	tb.Helper()
	uncompressed := []string{p.Redis}
	if p.O == nil {
		uncompressed = append(uncompressed, p.Other) // a second redis-server
	}
	for _, addr := range uncompressed {
		if got := string(DialRaw(tb, addr).Do("CONFIG", "SET", "rdbcompression", "no")); got != "+OK\r\n" {
			tb.Fatalf("%s: CONFIG SET rdbcompression no: %q", addr, got)
		}
	}
}
