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
