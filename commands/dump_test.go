package commands

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/store"
)

// dumpPayload frames an RDB object as DUMP does: the object, the RDB
// version and Redis's CRC64 of both, little endian.
func dumpPayload(tb testing.TB, object string, version uint16) string {
	tb.Helper()
	b := binary.LittleEndian.AppendUint16([]byte(object), version)
	return string(binary.LittleEndian.AppendUint64(b, dumpCRC(b)))
}

// Redis's crc64.c documents its check value: crc64(0, "123456789").
func TestDumpCRCIsRedisCRC64(t *testing.T) {
	if got := dumpCRC([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("dumpCRC(123456789) = %#x, want 0xe9c6d914c4b8d9ca", got)
	}
}

// DUMP's payloads are those of redis-server 7.0 (copied from its replies;
// the integration tests compare many more shapes with a live one).
func TestDumpStringIsRedis(t *testing.T) {
	for _, tc := range []struct{ value, payload string }{
		{"", "\x00\x00\n\x00]\x9b\\@\x0f\x7f\xa2\xda"},
		{"1", "\x00\xc0\x01\n\x00&x\xe7\xb6\xd1\x01\x11\xfc"},
		{"-129", "\x00\xc1\x7f\xff\n\x00\x17`\x82(T\x80\x84\x80"},
		{"2147483648", "\x00\n2147483648\n\x00\xe7\xb1)\xa3L\x1dv\xee"},
	} {
		if got := string(dumpString([]byte(tc.value))); got != tc.payload {
			t.Errorf("DUMP of %q = %q, want %q", tc.value, got, tc.payload)
		}
	}
}

// Every encoding DUMP writes reads back to the same bytes: the integer
// boundaries, the length boundaries and strings that only look like
// integers.
func TestDumpRestoreRoundTrip(t *testing.T) {
	for _, v := range []string{
		"", "0", "-1", "127", "128", "-128", "-129", "32767", "32768", "-32768", "-32769",
		"2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
		"01", "-0", "+1", " 1", "1 ", "1\x00", "\x00\xff\r\n",
		strings.Repeat("x", 63), strings.Repeat("x", 64), strings.Repeat("y", 1<<14-1),
		strings.Repeat("y", 1<<14), strings.Repeat("0123456789abcdef", 1<<12),
	} {
		got, err := restoreString(dumpString([]byte(v)))
		if err != nil || string(got) != v {
			t.Errorf("RESTORE of DUMP %.40q: %.40q %v", v, got, err)
		}
	}
}

// RESTORE reads what Redis 7.0 (and earlier RDB versions) writes and
// refuses the rest with Redis's errors (rdb.c, cluster.c).
func TestRestoreStringPayloads(t *testing.T) {
	p := func(object string) string { return dumpPayload(t, object, rdbVersion) }
	xs := strings.Repeat("x", 30)
	inFooter := p("\x00\xc2")
	footerInt := strconv.Itoa(int(int32(binary.LittleEndian.Uint32([]byte(inFooter[2:])))))
	for _, tc := range []struct {
		name, payload string
		want          string
		err           error
	}{
		{"redis lzf", "\x00\xc3\t\x1e\x01xx\xe0\x11\x00\x01xx\n\x00\xf0g?\xdf \x01\xeb\x95", xs, nil},
		{"redis list", "\x12\x01\x02\n\n\x00\x00\x00\x01\x00\x81a\x02\xff\n\x00\t\xb9\xed\xf5\x94\xde\xd9\x95", "", ErrBadData},
		{"int8", p("\x00\xc0\x80"), "-128", nil},
		{"int16", p("\x00\xc1\x00\x80"), "-32768", nil},
		{"int32", p("\x00\xc2\xff\xff\xff\x7f"), "2147483647", nil},
		{"14-bit length", p("\x00\x40\x03abc"), "abc", nil},
		{"32-bit length", p("\x00\x80\x00\x00\x00\x03abc"), "abc", nil},
		{"64-bit length", p("\x00\x81\x00\x00\x00\x00\x00\x00\x00\x03abc"), "abc", nil},
		{"rdb version 1", dumpPayload(t, "\x00\x01a", 1), "a", nil},
		{"rdb version 0", dumpPayload(t, "\x00\x01a", 0), "a", nil},
		{"bytes after the object", p("\x00\x01abcdef"), "a", nil},
		{"lzf of length 0", p("\x00\xc3\x02\x00\x01ab"), "", nil},
		{"lzf back reference", p("\x00\xc3\x05\x05\x01ab\x20\x01"), "ababa", nil},
		// Redis reads the object out of the whole payload: an integer
		// whose bytes are the footer's is read.
		{"int32 in the footer", inFooter, footerInt, nil},
		{"rdb version 11", dumpPayload(t, "\x00\x01a", 11), "", ErrDumpPayload},
		{"wrong checksum", p("\x00\x01a")[:13] + "\x00", "", ErrDumpPayload},
		{"too short", "\x00\x01a\n\x00\x00\x00\x00\x00", "", ErrDumpPayload},
		{"empty", "", "", ErrDumpPayload},
		{"no object", p(""), "", ErrBadData},
		{"unknown type", p("\x08\x01a"), "", ErrBadData},
		{"unknown length encoding", p("\x00\x82\x00"), "", ErrBadData},
		{"unknown string encoding", p("\x00\xc4"), "", ErrBadData},
		{"length past the end", p("\x00\x3fabc"), "", ErrBadData},
		{"length of all ones", p("\x00\x81\xff\xff\xff\xff\xff\xff\xff\xff"), "", ErrBadData},
		{"lzf of no bytes", p("\x00\xc3\x00\x01"), "", ErrBadData},
		{"lzf shorter than its length", p("\x00\xc3\x02\x03\x01ab"), "", ErrBadData},
		{"lzf longer than its length", p("\x00\xc3\x02\x01\x01ab"), "", ErrBadData},
		{"lzf reference before the start", p("\x00\xc3\x02\x05\x20\x05"), "", ErrBadData},
		{"lzf length beyond any expansion", p("\x00\xc3\x02\x7f\xff\x20\x00"), "", ErrBadData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := restoreString([]byte(tc.payload))
			if !errors.Is(err, tc.err) || string(got) != tc.want {
				t.Fatalf("restoreString(%q) = %q, %v; want %q, %v", tc.payload, got, err, tc.want, tc.err)
			}
		})
	}
}

// A string larger than the store takes is refused before it is
// decompressed, with the error SET gives such a value.
func TestRestoreRefusesAValueTooLongBeforeDecompressing(t *testing.T) {
	// An LZF run of 264-byte back references: 2 MB compressed is 176 MB.
	in := []byte{0x00, 'a'} // a literal
	n := store.MaxValueLen + 1
	for out := 1; out < n; out += 264 {
		in = append(in, 0xe0, 255, 0)
	}
	var object []byte
	object = append(object, rdbTypeString, 0xc3)
	object = appendRDBLen(object, uint64(len(in)))
	object = appendRDBLen(object, uint64(n))
	object = append(object, in...)
	_, err := restoreString([]byte(dumpPayload(t, string(object), rdbVersion)))
	if !errors.Is(err, store.ErrValueTooLong) {
		t.Fatalf("restore of %d bytes: %v, want ErrValueTooLong", n, err)
	}
}

func TestParseRestoreOpts(t *testing.T) {
	for _, tc := range []struct {
		args string
		want restoreOpts
		err  string
	}{
		{"", restoreOpts{}, ""},
		{"REPLACE", restoreOpts{replace: true}, ""},
		{"absttl replace", restoreOpts{replace: true, absTTL: true}, ""},
		{"IDLETIME 10 IDLETIME 0", restoreOpts{}, ""},
		{"FREQ 255 REPLACE", restoreOpts{replace: true}, ""},
		{"IDLETIME -1", restoreOpts{}, "ERR Invalid IDLETIME value, must be >= 0"},
		{"IDLETIME x", restoreOpts{}, ErrNotInteger.Error()},
		{"FREQ 256", restoreOpts{}, "ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{"FREQ -1", restoreOpts{}, "ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{"IDLETIME 1 FREQ 1", restoreOpts{}, ErrSyntax.Error()},
		{"FREQ 1 IDLETIME 1", restoreOpts{}, ErrSyntax.Error()},
		{"IDLETIME", restoreOpts{}, ErrSyntax.Error()},
		{"REPLACE NX", restoreOpts{}, ErrSyntax.Error()},
	} {
		var args [][]byte
		for _, a := range strings.Fields(tc.args) {
			args = append(args, []byte(a))
		}
		got, err := parseRestoreOpts(args)
		if tc.err != "" {
			if err == nil || errorText(err) != tc.err {
				t.Errorf("%q: error %v, want %s", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.args, got, err, tc.want)
		}
	}
}

// RESTORE as a command: Redis's order of checks, its TTL rules, and no
// way to make or dump a ONCE record (KV-3, CONTRACT's ONCE record type).
func TestRestoreCommand(t *testing.T) {
	srv := onceServerOver(t, openTestStore(t))
	c := newConn()
	abc := dumpString([]byte("abc"))
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"RESTORE", "k", "0", string(abc)}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$3\r\nabc\r\n"},
		// The key exists: refused before the TTL or the payload is looked at.
		{[]string{"RESTORE", "k", "x", "bad"}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]string{"RESTORE", "k", "0", string(abc), "BAD"}, "-ERR syntax error\r\n"},
		{[]string{"RESTORE", "n", "x", "bad"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"RESTORE", "n", "-1", "bad"}, "-ERR Invalid TTL value, must be >= 0\r\n"},
		{[]string{"RESTORE", "n", "0", "bad"}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]string{"RESTORE", "k", "100000", string(dumpString([]byte("7"))), "REPLACE"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\n7\r\n"},
		{[]string{"DBSIZE"}, ":1\r\n"},
		{[]string{"INFO", "keyspace"}, "$44\r\n# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=0\r\n\r\n"},
		// A deadline past: REPLACE removes the key, nothing is made.
		{[]string{"RESTORE", "k", "1", string(abc), "REPLACE", "ABSTTL"}, "+OK\r\n"},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		{[]string{"RESTORE", "k", "9223372036854775807", string(abc)}, "+OK\r\n"},
		{[]string{"EXISTS", "k"}, ":0\r\n"},
		{[]string{"DBSIZE"}, ":0\r\n"},
		// A ONCE record is a key like any other to RESTORE, and DUMP
		// refuses it: no Redis server could restore it.
		{[]string{"ONCE.CLAIM", "o"}, "*2\r\n$7\r\nclaimed\r\n:1\r\n"},
		{[]string{"DUMP", "o"}, "-" + ErrDumpOnce.Error() + "\r\n"},
		{[]string{"RESTORE", "o", "0", string(abc)}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]string{"RESTORE", "o", "0", string(abc), "REPLACE"}, "+OK\r\n"},
		{[]string{"TYPE", "o"}, "+string\r\n"},
		{[]string{"DUMP", "o"}, bulk(abc)},
		{[]string{"DUMP", "nokey"}, "$-1\r\n"},
	} {
		expect(t, srv, c, st.want, st.args...)
	}
}

// RESTORE is a write like any other (KV-6): while the store refuses
// writes it answers -MISCONF and changes nothing. (The store is seen
// without its Hold, which refusingStore does not refuse, so that every
// transaction goes through its Update.)
func TestRestoreWhileTheStoreRefusesWrites(t *testing.T) {
	rs := &refusingStore{DB: openTestStore(t)}
	srv := onceServerOver(t, struct {
		store.Store
		store.WriteChecker
	}{rs, rs})
	c := newConn()
	expect(t, srv, c, "+OK\r\n", "SET", "a", "v")
	rs.refuse.Store(true)
	for _, args := range [][]string{
		{"RESTORE", "a", "0", string(dumpString([]byte("w"))), "REPLACE"},
		{"RESTORE", "b", "0", string(dumpString([]byte("w")))},
	} {
		if r := send(srv, c, args...); !strings.HasPrefix(r, "-MISCONF ") {
			t.Errorf("%q while writes are refused: %q, want -MISCONF …", args[:2], r)
		}
	}
	expect(t, srv, c, "$1\r\nv\r\n", "GET", "a")
	expect(t, srv, c, ":0\r\n", "EXISTS", "b")
	expect(t, srv, c, bulk(dumpString([]byte("v"))), "DUMP", "a")
}

// FuzzRestore: RESTORE of any bytes answers OK, after which the key holds
// a string that DUMP gives back the same (or a value of another type whose
// DUMP restores to the same), or one of RESTORE's errors; it
// never panics. With fix set, the input gets a valid footer, so that the
// object's decoding is what is fuzzed.
func FuzzRestore(f *testing.F) {
	for _, seed := range []string{
		"\x00\xc3\t\x1e\x01xx\xe0\x11\x00\x01xx", "\x00\xc0\x01", "\x00\xc2\x01\x02\x03\x04",
		"\x00\x40\x03abc", "\x00\x81\x00\x00\x00\x00\x00\x00\x00\x01a", "\x00\xc3\x05\x05\x01ab\x20\x01",
		"\x12\x01\x02\n\n\x00\x00\x00\x01\x00\x81a\x02\xff",
		// Sorted sets: a listpack, a skiplist (type 5), type 3.
		"\x11\x0f\x0f\x00\x00\x00\x02\x00\x81m\x02\x831.5\x04\xff",
		"\x05\x02\x01x\x00\x00\x00\x00\x00\x00\xf0\x7f\x01a\x00\x00\x00\x00\x00\x00\x00\x80",
		"\x03\x02\x01a\x031.5\x01b\xfe",
	} {
		f.Add([]byte(seed), uint16(rdbVersion), true)
		f.Add([]byte(seed), uint16(rdbVersion), false)
	}
	srv := onceServerOver(f, openTestStore(f))
	f.Fuzz(func(t *testing.T, object []byte, version uint16, fix bool) {
		payload := string(object)
		if fix {
			payload = dumpPayload(t, payload, version)
		}
		c := newConn()
		got := send(srv, c, "RESTORE", "k", "0", payload, "REPLACE")
		switch got {
		case "+OK\r\n":
			want, err := restoreString([]byte(payload))
			if err != nil {
				// Another type (a hash, a set, a list, a sorted set): what DUMP
				// gives back restores to the same value.
				d := send(srv, c, "DUMP", "k")
				_, body, ok := strings.Cut(d, "\r\n")
				if !strings.HasPrefix(d, "$") || !ok {
					t.Fatalf("RESTORE %q answered OK (not a string), then DUMP %q", payload, d)
				}
				again := strings.TrimSuffix(body, "\r\n")
				if r := send(srv, c, "RESTORE", "k2", "0", again, "REPLACE"); r != "+OK\r\n" {
					t.Fatalf("RESTORE %q answered OK, but its DUMP %q does not restore: %q", payload, again, r)
				}
				if d2 := send(srv, c, "DUMP", "k2"); d2 != d {
					t.Fatalf("RESTORE %q: DUMP %q, restored again %q", payload, d, d2)
				}
				return
			}
			if v := send(srv, c, "GET", "k"); v != bulk(want) {
				t.Fatalf("RESTORE %q answered OK, then GET %q, want %q", payload, v, bulk(want))
			}
			if d := send(srv, c, "DUMP", "k"); d != bulk(dumpString(want)) {
				t.Fatalf("RESTORE %q: DUMP %q, want %q", payload, d, bulk(dumpString(want)))
			}
		case "-" + ErrDumpPayload.Error() + "\r\n", "-" + ErrBadData.Error() + "\r\n", "-" + ErrValueTooLong.Error() + "\r\n":
		default:
			t.Fatalf("RESTORE %q answered %q", payload, got)
		}
	})
}

// bulk is b as a RESP bulk string.
func bulk(b []byte) string { return "$" + strconv.Itoa(len(b)) + "\r\n" + string(b) + "\r\n" }
