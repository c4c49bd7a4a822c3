package integration

import "testing"

// TestDiffClientPause: CLIENT PAUSE, UNPAUSE and UNBLOCK against a real
// redis-server 7.0, byte for byte: their argument errors and replies,
// which commands a pause holds and when their answers come. Every script
// ends unpaused (the next one starts with a FLUSHALL).
func TestDiffClientPause(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, []Script{
		{"pause-args", []Step{
			cmd("CLIENT", "PAUSE"),
			cmd("CLIENT", "PAUSE", "x"),
			cmd("CLIENT", "PAUSE", "-1"),
			cmd("CLIENT", "PAUSE", "1.5"),
			cmd("CLIENT", "PAUSE", "+5"),
			cmd("CLIENT", "PAUSE", "01"),
			cmd("CLIENT", "PAUSE", "99999999999999999999"),
			cmd("CLIENT", "PAUSE", "100", "foo"),
			cmd("CLIENT", "PAUSE", "x", "foo"), // the mode is checked first
			cmd("CLIENT", "PAUSE", "-1", "WRITE"),
			cmd("CLIENT", "PAUSE", "100", "write", "extra"),
			cmd("CLIENT", "PAUSE", "100", "WRITE", "extra"),
			cmd("client", "pause", "0"), // a deadline at the epoch: no pause
			cmd("GET", "k"),
			// A deadline that wraps past the clock's end is in the past.
			cmd("CLIENT", "PAUSE", "9223372036854775807", "ALL"),
			cmd("GET", "k"),
			cmd("CLIENT", "UNPAUSE"),
			cmd("CLIENT", "UNPAUSE"),
			cmd("CLIENT", "UNPAUSE", "x"),
			cmd("COMMAND", "INFO", "client|pause", "client|unpause", "client|unblock"),
		}},
		{"unblock-args", []Step{
			cmd("CLIENT", "UNBLOCK"),
			cmd("CLIENT", "UNBLOCK", "x"),
			cmd("CLIENT", "UNBLOCK", "+5"),
			cmd("CLIENT", "UNBLOCK", "99999999999999999999"),
			cmd("CLIENT", "UNBLOCK", "1", "foo"),
			cmd("CLIENT", "UNBLOCK", "x", "foo"), // the reason is checked first
			cmd("CLIENT", "UNBLOCK", "1", "timeout", "extra"),
			cmd("CLIENT", "UNBLOCK", "0"),
			cmd("CLIENT", "UNBLOCK", "-5"),
			cmd("CLIENT", "UNBLOCK", "999999"),
			cmd("CLIENT", "UNBLOCK", "999999", "ERROR"),
			cmd("CLIENT", "UNBLOCK", "999999", "timeout"),
			// Connection 1 is not blocked: id 1 and 2 name no blocked
			// client on either side.
			cmd("PING").On(1),
			cmd("CLIENT", "UNBLOCK", "1"),
			cmd("CLIENT", "UNBLOCK", "2", "ERROR"),
			cmd("PING").On(1),
		}},
		// WRITE holds the commands that write, and nothing else: reads,
		// PING, CLIENT and a MULTI of reads answer; the writes are
		// answered, in the order they came, once the pause ends.
		{"pause-write", []Step{
			cmd("SET", "k", "v0"),
			cmd("CLIENT", "PAUSE", "100000", "WRITE"),
			cmd("GET", "k").On(1),
			cmd("PING").On(1),
			cmd("CLIENT", "GETNAME").On(1),
			cmd("EXISTS", "k").On(1),
			held("SET", "k", "v1").On(1),
			held("SET", "k", "v2").On(2),
			held("DEL", "k").On(3),
			cmd("GET", "k").On(4),
			cmd("MULTI").On(4),
			cmd("GET", "k").On(4),
			cmd("EXEC").On(4),
			cmd("CLIENT", "UNPAUSE"),
			readNext().On(1),
			readNext().On(2),
			readNext().On(3),
			cmd("GET", "k").On(4),
			cmd("DBSIZE"),
		}},
		// Inside MULTI, a write is held before it is queued, and an EXEC
		// of writes queued before the pause is held too.
		{"pause-write-multi", []Step{
			cmd("MULTI").On(1),
			cmd("INCR", "n").On(1),
			cmd("CLIENT", "PAUSE", "100000", "WRITE"),
			held("EXEC").On(1),
			cmd("MULTI").On(2),
			cmd("GET", "n").On(2),
			held("INCR", "n").On(2),
			cmd("CLIENT", "UNPAUSE"),
			readNext().On(1),
			readNext().On(2),
			cmd("EXEC").On(2),
		}},
		// ALL holds every command, CLIENT UNPAUSE and PING included,
		// until the deadline; errors found before a command runs (an
		// unknown command, a wrong arity) still answer at once. (The
		// connections are opened first: in RESP3 their HELLO would be
		// held too.)
		{"pause-all-deadline", []Step{
			cmd("SET", "k", "v"),
			cmd("PING").On(1),
			cmd("PING").On(2),
			cmd("PING").On(3),
			cmd("CLIENT", "PAUSE", "1500", "ALL"),
			held("PING").On(1),
			held("CLIENT", "UNPAUSE").On(2),
			cmd("NOSUCH").On(3),
			cmd("GET").On(3),
			readNext().On(1),
			readNext().On(2),
			cmd("GET", "k").On(3),
		}},
		// A later pause raises the mode (WRITE, then ALL holds reads
		// too) and moves the deadline only later.
		{"pause-mode-rises", []Step{
			cmd("SET", "k", "v"),
			cmd("CLIENT", "PAUSE", "1000", "WRITE"),
			cmd("GET", "k").On(1),
			cmd("CLIENT", "PAUSE", "10", "ALL"),
			held("GET", "k").On(1),
			readNext().On(1),
		}},
		// While paused, expired keys are not deleted (reads do not see
		// them all the same): DBSIZE still counts them until the pause
		// ends.
		{"pause-expiry", []Step{
			cmd("SET", "k", "v", "PX", "100"),
			cmd("SET", "keep", "v"),
			cmd("CLIENT", "PAUSE", "100000", "WRITE"),
			sleep(400),
			cmd("GET", "k"),
			cmd("EXISTS", "k"),
			cmd("DBSIZE"),
			cmd("CLIENT", "UNPAUSE"),
			sleep(600),
			cmd("DBSIZE"),
		}},
	})
}
