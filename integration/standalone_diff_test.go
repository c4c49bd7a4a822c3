package integration

import "testing"

// TestDiffWaitRole compares WAIT and ROLE with redis-server 7.0, a
// standalone master with no replicas: WAIT answers 0 at once when no
// replica is asked for or inside MULTI, else 0 once its timeout ran out;
// its errors come in Redis's order; ROLE is a master at offset 0.
func TestDiffWaitRole(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, []Script{
		{"wait", []Step{
			cmd("WAIT", "0", "0"),
			cmd("WAIT", "-1", "0"),
			cmd("WAIT", "-5", "100"),
			cmd("WAIT", "0", "-1"),
			cmd("WAIT", "1", "-1"),
			cmd("WAIT", "1", "x"),
			cmd("WAIT", "x", "1"),
			cmd("WAIT", "x", "-1"),
			cmd("WAIT", "1.5", "0"),
			cmd("WAIT", "1", "1.5"),
			cmd("WAIT", "1", overMax),
			cmd("WAIT", "1"),
			cmd("WAIT", "1", "2", "3"),
			cmd("WAIT", "1", "50"),
			cmd("WAIT", "3", "1"),
			cmd("SET", "k", "v"),
			cmd("WAIT", "1", "20"),
			cmd("MULTI"),
			cmd("WAIT", "5", "0"),
			cmd("WAIT", "0", "-1"),
			cmd("EXEC"),
		}},
		{"role", []Step{
			cmd("ROLE"),
			cmd("ROLE", "x"),
			cmd("MULTI"),
			cmd("ROLE"),
			cmd("EXEC"),
		}},
		{"command info", []Step{
			cmd("COMMAND", "INFO", "wait", "role", "lcs"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "LCS", "a", "b", "IDX"),
			cmd("COMMAND", "GETKEYS", "LCS", "a", "b"),
		}},
	})
}

// TestDiffWaitUnblock compares how CLIENT UNBLOCK ends a WAIT that would
// wait for ever, on redis-server 7.0 and here: with 0 as if it timed
// out, or with -UNBLOCKED; a client that leaves while it waits leaves
// the server well.
func TestDiffWaitUnblock(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	for _, mode := range [][]string{nil, {"TIMEOUT"}, {"ERROR"}} {
		var got [2]string
		for i, addr := range []string{p.Redis, p.Other} {
			c, ctl := DialRaw(t, addr), DialRaw(t, addr)
			id := c.ReadFrameAfterDo(t, "CLIENT", "ID").Str
			c.Send(EncodeCommand("WAIT", "1", "0"))
			awaitBlocked(t, ctl, 1)
			args := append([]string{"CLIENT", "UNBLOCK", id}, mode...)
			if r := string(ctl.Do(args...)); r != ":1\r\n" {
				t.Fatalf("%s: %q = %q", addr, args, r)
			}
			got[i] = string(c.ReadReply())
			// Leaving while blocked.
			c.Send(EncodeCommand("WAIT", "1", "0"))
			awaitBlocked(t, ctl, 1)
			c.Close()
			awaitBlocked(t, ctl, 0)
			if r := string(ctl.Do("PING")); r != "+PONG\r\n" {
				t.Fatalf("%s: PING = %q", addr, r)
			}
		}
		if got[0] != got[1] {
			t.Errorf("CLIENT UNBLOCK %v of WAIT: redis %q, oncekv %q", mode, got[0], got[1])
		}
	}
}

// TestDiffIntrospection compares LATENCY, MEMORY, LOLWUT and
// BGREWRITEAOF with redis-server 7.0: byte for byte where Redis's reply
// does not depend on the process (the latency monitor is off, the help,
// the errors, the version line), by shape where it does (MEMORY STATS,
// USAGE, DOCTOR).
func TestDiffIntrospection(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, []Script{
		{"latency", []Step{
			cmd("LATENCY", "LATEST"),
			cmd("LATENCY", "HISTORY", "command"),
			cmd("LATENCY", "RESET"),
			cmd("LATENCY", "RESET", "command", "fast-command"),
			cmd("LATENCY", "DOCTOR"),
			cmd("LATENCY", "GRAPH", "command"),
			cmd("LATENCY", "HISTOGRAM", "nosuch"),
			cmd("LATENCY", "HELP"),
			cmd("LATENCY", "help"),
			cmd("LATENCY", "NOSUCH"),
			cmd("LATENCY"),
			cmd("LATENCY", "LATEST", "x"),
			cmd("LATENCY", "HISTORY"),
			cmd("LATENCY", "GRAPH"),
		}},
		{"memory", []Step{
			cmd("SET", "k", "some value"),
			typeOnly("MEMORY", "USAGE", "k"),
			typeOnly("MEMORY", "USAGE", "k", "SAMPLES", "0"),
			typeOnly("MEMORY", "USAGE", "k", "samples", "5", "SAMPLES", "1"),
			cmd("MEMORY", "USAGE", "nokey"),
			cmd("MEMORY", "USAGE", "k", "SAMPLES", "x"),
			cmd("MEMORY", "USAGE", "k", "SAMPLES", "-1"),
			cmd("MEMORY", "USAGE", "k", "SAMPLES"),
			cmd("MEMORY", "USAGE", "k", "bogus"),
			cmd("MEMORY", "USAGE", "nokey", "bogus"),
			cmd("MEMORY", "USAGE"),
			cmd("MEMORY", "PURGE"),
			typeOnly("MEMORY", "DOCTOR"),
			typeOnly("MEMORY", "STATS"),
			cmd("MEMORY", "HELP"),
			cmd("MEMORY", "STATS", "x"),
			cmd("MEMORY", "NOSUCH"),
			cmd("MEMORY"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "MEMORY", "USAGE", "k"),
			// Inside EXEC, which holds the store's lock already.
			cmd("MULTI"),
			cmd("MEMORY", "STATS"),
			cmd("MEMORY", "USAGE", "nokey"),
			typeOnly("EXEC"),
		}},
		{"lolwut", []Step{
			cmd("LOLWUT"),
			cmd("lolwut", "x"),
			cmd("LOLWUT", "VERSION", "1"),
			cmd("LOLWUT", "VERSION", "x"),
			cmd("LOLWUT", "VERSION"),
		}},
		{"bgrewriteaof", []Step{
			// Once: redis-server's rewrite may still run in the RESP3
			// run, and answer that it does.
			cmd("BGREWRITEAOF").InResp(2),
			cmd("BGREWRITEAOF", "x"),
		}},
		{"command info", []Step{
			// A container's subcommands come in Redis's hash table's
			// order there (README: differences): they are asked one by one.
			cmd("COMMAND", "INFO", "latency|latest", "latency|history", "latency|reset",
				"latency|doctor", "latency|graph", "latency|histogram", "latency|help"),
			cmd("COMMAND", "INFO", "memory|usage", "memory|stats", "memory|doctor", "memory|malloc-stats",
				"memory|purge", "memory|help", "lolwut", "bgrewriteaof"),
		}},
	})
}
