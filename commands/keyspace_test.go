package commands

import (
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// TestObjectEncoding: OBJECT ENCODING and REFCOUNT of a string are what
// Redis 7.0's tryObjectEncoding makes of SET's value (integration's
// TestDiffCopyMoveObject compares them with a redis-server).
func TestObjectEncoding(t *testing.T) {
	tests := []struct {
		kind     store.Kind
		data     string
		name     string
		refcount int64
	}{
		{store.KindString, "0", "int", sharedRefcount},
		{store.KindString, "9999", "int", sharedRefcount},
		{store.KindString, "10000", "int", 1},
		{store.KindString, "-1", "int", 1},
		{store.KindString, "-9223372036854775808", "int", 1},
		{store.KindString, "9223372036854775808", "embstr", 1},
		{store.KindString, "01", "embstr", 1},
		{store.KindString, "+1", "embstr", 1},
		{store.KindString, "-0", "embstr", 1},
		{store.KindString, " 1", "embstr", 1},
		{store.KindString, "", "embstr", 1},
		{store.KindString, strings.Repeat("a", 44), "embstr", 1},
		{store.KindString, strings.Repeat("a", 45), "raw", 1},
		{store.KindString, strings.Repeat("1", 45), "raw", 1},
		{store.KindOnce, "1", "raw", 1},
	}
	for _, tt := range tests {
		got := objectEncoding(store.Value{Kind: tt.kind, Data: []byte(tt.data)})
		if got.name != tt.name || got.refcount != tt.refcount {
			t.Errorf("objectEncoding(%c %q) = %+v, want %s %d", tt.kind, tt.data, got, tt.name, tt.refcount)
		}
	}
}

// unheldStore is a refusingStore whose lock cannot be held across
// commands (no store.Holder), so that every command's transaction is its
// Update, which refuses.
type unheldStore struct{ rs *refusingStore }

func (s unheldStore) View(fn func(store.Tx) error) (store.Ticket, error) { return s.rs.View(fn) }
func (s unheldStore) Update(fn func(store.Tx) error) (store.Ticket, error) {
	return s.rs.Update(fn)
}
func (s unheldStore) Databases() int  { return s.rs.Databases() }
func (s unheldStore) Close() error    { return s.rs.Close() }
func (s unheldStore) WriteErr() error { return s.rs.WriteErr() }

// TestKeyspaceWritesRefusedWhileTheStoreRefuses: COPY, MOVE and SWAPDB
// are writes: while the store refuses writes (a full disk) they answer
// -MISCONF and change nothing, at once or queued in MULTI; OBJECT, a
// read, answers (KV-6).
func TestKeyspaceWritesRefusedWhileTheStoreRefuses(t *testing.T) {
	rs := &refusingStore{DB: openTestStore(t)}
	srv := onceServerOver(t, unheldStore{rs})
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	if r := send(srv, c, "SET", "a", "1"); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	rs.refuse.Store(true)
	for _, args := range [][]string{
		{"COPY", "a", "b"},
		{"COPY", "a", "b", "DB", "1", "REPLACE"},
		{"MOVE", "a", "1"},
		{"SWAPDB", "0", "1"},
	} {
		if r := send(srv, c, args...); !strings.HasPrefix(r, "-MISCONF ") {
			t.Errorf("%q while the store refuses writes: %q, want -MISCONF", args, r)
		}
		expect(t, srv, c, "+OK\r\n", "MULTI")
		if r := send(srv, c, args...); !strings.HasPrefix(r, "-MISCONF ") {
			t.Errorf("%q queued while the store refuses writes: %q, want -MISCONF", args, r)
		}
		expect(t, srv, c, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"OBJECT", "ENCODING", "a"}, "$3\r\nint\r\n"},
		{[]string{"EXISTS", "b"}, ":0\r\n"},
		{[]string{"DBSIZE"}, ":1\r\n"},
	} {
		if r := send(srv, c, tt.args...); r != tt.want {
			t.Errorf("%q while the store refuses writes: %q, want %q", tt.args, r, tt.want)
		}
	}
	rs.refuse.Store(false)
	if r := send(srv, c, "MOVE", "a", "1"); r != ":1\r\n" {
		t.Errorf("MOVE once writes are taken again: %q", r)
	}
}

// TestSwapDBReadsBothIndexesFirst: SWAPDB reads both indexes before it
// checks either against databases, as Redis 7.0's swapdbCommand does, so
// a second index that is not an integer is reported even when the first
// is out of range (KV-3, KV-7; found by FuzzDiff).
func TestSwapDBReadsBothIndexesFirst(t *testing.T) {
	srv := onceServer(t)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"SWAPDB", "16", "abc"}, "-ERR invalid second DB index\r\n"},
		{[]string{"SWAPDB", "-1", ""}, "-ERR invalid second DB index\r\n"},
		{[]string{"SWAPDB", "16", "99999999999"}, "-ERR invalid second DB index\r\n"},
		{[]string{"SWAPDB", "abc", "16"}, "-ERR invalid first DB index\r\n"},
		{[]string{"SWAPDB", "16", "0"}, "-ERR DB index is out of range\r\n"},
		{[]string{"SWAPDB", "0", "16"}, "-ERR DB index is out of range\r\n"},
		{[]string{"SWAPDB", "0", "1"}, "+OK\r\n"},
	} {
		if r := send(srv, c, tt.args...); r != tt.want {
			t.Errorf("%q: %q, want %q", tt.args, r, tt.want)
		}
	}
}

// TestSwapDBWithItselfTouchesNoWatch: SWAPDB of a database with itself
// changes nothing, so a WATCH of a key there does not abort EXEC, as in
// Redis 7.0, whose dbSwapDatabases returns before it touches the watched
// keys; a swap of two databases does (KV-7; found by hand next to
// FuzzDiff's WATCH … SWAPDB … EXEC).
func TestSwapDBWithItselfTouchesNoWatch(t *testing.T) {
	for _, tt := range []struct {
		swap []string
		exec string
	}{
		{[]string{"SWAPDB", "0", "0"}, "*1\r\n$1\r\nv\r\n"},
		{[]string{"SWAPDB", "1", "1"}, "*1\r\n$1\r\nv\r\n"},
		{[]string{"SWAPDB", "0", "1"}, "*-1\r\n"},
	} {
		t.Run(strings.Join(tt.swap, " "), func(t *testing.T) {
			srv := onceServer(t)
			c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			other := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			expect(t, srv, c, "+OK\r\n", "SET", "a", "v")
			expect(t, srv, c, "+OK\r\n", "WATCH", "a")
			expect(t, srv, other, "+OK\r\n", tt.swap...)
			expect(t, srv, c, "+OK\r\n", "MULTI")
			expect(t, srv, c, "+QUEUED\r\n", "GET", "a")
			expect(t, srv, c, tt.exec, "EXEC")
		})
	}
}
