package commands

import (
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// While the store refuses writes (a full disk: -MISCONF), reads keep
// working (README, min-free-disk), and so does a transaction of reads, as
// in Redis 7, whose EXEC refuses only a transaction holding a write, and
// then discards it: -EXECABORT Transaction discarded because of: MISCONF ….
// Here the store refuses writes from after the commands were queued.
func TestExecWhileTheStoreRefusesWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps [][]string
		// want is EXEC's reply, or its prefix when it ends in "…".
		want string
	}{
		{"reads", [][]string{{"GET", "a"}, {"EXISTS", "a", "b"}, {"TYPE", "a"}, {"ONCE.STATUS", "a"}},
			"*4\r\n$1\r\nv\r\n:1\r\n+string\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"reads and a runtime error", [][]string{{"GETRANGE", "a", "x", "y"}, {"SCAN", "0", "MATCH", "a"}, {"DBSIZE"}, {"SELECT", "1"}, {"DBSIZE"}, {"SELECT", "0"}},
			"*6\r\n-ERR value is not an integer or out of range\r\n*2\r\n$1\r\n0\r\n*1\r\n$1\r\na\r\n:1\r\n+OK\r\n:0\r\n+OK\r\n"},
		{"no command", nil, "*0\r\n"},
		// PING is refused as it is queued, not in EXEC: Redis 7.0's
		// processCommand refuses it, and EXEC runs it as it runs GET.
		{"PING queued before", [][]string{{"PING"}, {"GET", "a"}, {"PING", "x"}},
			"*3\r\n+PONG\r\n$1\r\nv\r\n$1\r\nx\r\n"},
		// The once section, which needs the exclusive lock, is empty, as
		// INFO's outside MULTI while writes are refused.
		{"INFO", [][]string{{"GET", "a"}, {"INFO", "keyspace"}, {"INFO", "once"}},
			"*3\r\n$1\r\nv\r\n$44\r\n# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n\r\n$8\r\n# Once\r\n\r\n"},
		{"a write", [][]string{{"GET", "a"}, {"SET", "a", "w"}},
			"-EXECABORT Transaction discarded because of: MISCONF …"},
		{"a ONCE claim", [][]string{{"ONCE.CLAIM", "k"}},
			"-EXECABORT Transaction discarded because of: MISCONF …"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &refusingStore{DB: openTestStore(t)}
			srv := onceServerOver(t, rs)
			c := newConn()
			expect(t, srv, c, "+OK\r\n", "SET", "a", "v")
			expect(t, srv, c, "+OK\r\n", "MULTI")
			for _, st := range tc.steps {
				expect(t, srv, c, "+QUEUED\r\n", st...)
			}
			rs.refuse.Store(true)
			got := send(srv, c, "EXEC")
			if want, ok := strings.CutSuffix(tc.want, "…"); ok {
				if !strings.HasPrefix(got, want) {
					t.Errorf("EXEC: %q, want %q…", got, want)
				}
			} else if got != tc.want {
				t.Errorf("EXEC: %q, want %q", got, tc.want)
			}
			// The transaction is over either way, and wrote nothing.
			expect(t, srv, c, "-ERR EXEC without MULTI\r\n", "EXEC")
			expect(t, srv, c, "$1\r\nv\r\n", "GET", "a")
		})
	}
}

// A write queued while the store refuses writes is refused with -MISCONF
// and spoils the transaction, as in Redis 7: EXEC answers -EXECABORT …
// previous errors. Reads are queued as ever.
func TestQueuedWriteWhileTheStoreRefusesWrites(t *testing.T) {
	for _, write := range [][]string{
		{"SET", "a", "w"}, {"DEL", "a"}, {"EXPIRE", "a", "10"}, {"FLUSHDB"},
		{"ONCE.CLAIM", "k"}, {"ONCE.CLAIM", "k", "WAIT", "0"},
		{"RESTORE", "a", "0", string(dumpString([]byte("w"))), "REPLACE"},
	} {
		t.Run(write[0], func(t *testing.T) {
			rs := &refusingStore{DB: openTestStore(t)}
			srv := onceServerOver(t, rs)
			c := newConn()
			expect(t, srv, c, "+OK\r\n", "SET", "a", "v")
			rs.refuse.Store(true)
			expect(t, srv, c, "+OK\r\n", "MULTI")
			expect(t, srv, c, "+QUEUED\r\n", "GET", "a")
			if r := send(srv, c, write...); !strings.HasPrefix(r, "-MISCONF ") {
				t.Errorf("%q queued while writes are refused: %q, want -MISCONF …", write, r)
			}
			expect(t, srv, c, "+QUEUED\r\n", "TYPE", "a")
			rs.refuse.Store(false)
			expect(t, srv, c, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
			expect(t, srv, c, "$1\r\nv\r\n", "GET", "a")
		})
	}
}

// While the store refuses writes PING answers -MISCONF, before its
// argument count is checked, and in MULTI it spoils the transaction, as in
// Redis 7 (processCommand refuses PING with the writes): a health check
// that PINGs sees a server that cannot persist. ECHO still answers.
func TestPingWhileTheStoreRefusesWrites(t *testing.T) {
	rs := &refusingStore{DB: openTestStore(t)}
	srv := onceServerOver(t, rs)
	c := newConn()
	expect(t, srv, c, "+PONG\r\n", "PING")
	rs.refuse.Store(true)
	for _, args := range [][]string{{"PING"}, {"PING", "x"}, {"ping", "x", "y"}} {
		if r := send(srv, c, args...); !strings.HasPrefix(r, "-MISCONF ") {
			t.Errorf("%q while writes are refused: %q, want -MISCONF …", args, r)
		}
	}
	expect(t, srv, c, "$1\r\nx\r\n", "ECHO", "x")
	expect(t, srv, c, "+OK\r\n", "MULTI")
	if r := send(srv, c, "PING"); !strings.HasPrefix(r, "-MISCONF ") {
		t.Errorf("PING queued while writes are refused: %q, want -MISCONF …", r)
	}
	expect(t, srv, c, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	rs.refuse.Store(false)
	expect(t, srv, c, "+PONG\r\n", "PING")
	expect(t, srv, c, "$1\r\nx\r\n", "PING", "x")
}

// A WATCH still aborts a transaction of reads while writes are refused.
func TestExecWhileTheStoreRefusesWritesKeepsWatch(t *testing.T) {
	rs := &refusingStore{DB: openTestStore(t)}
	srv := onceServerOver(t, rs)
	c, other := newConn(), newConn()
	expect(t, srv, c, "+OK\r\n", "WATCH", "a")
	expect(t, srv, other, "+OK\r\n", "SET", "a", "v")
	rs.refuse.Store(true)
	expect(t, srv, c, "+OK\r\n", "MULTI")
	expect(t, srv, c, "+QUEUED\r\n", "GET", "a")
	expect(t, srv, c, "*-1\r\n", "EXEC")
}

// expect sends args on c and fails tb unless the reply is want.
func expect(tb testing.TB, srv *Server, c *resp.Conn, want string, args ...string) {
	tb.Helper()
	if r := send(srv, c, args...); r != want {
		tb.Fatalf("%q: %q, want %q", args, r, want)
	}
}
