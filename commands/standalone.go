package commands

import (
	"github.com/oncekv/oncekv/resp"
)

// standaloneCommands are the server commands of a standalone Redis 7.0
// that this server answers as one with no replicas: MONITOR, WAIT, ROLE.
func standaloneCommands() []*Command {
	return []*Command{
		{Name: "monitor", Arity: 1, Flags: Admin | NoScript | Loading | Stale,
			Categories: []string{"admin", "slow", "dangerous"}, Run: monitorCmd},
		{Name: "wait", Arity: 3, Flags: NoScript,
			Categories: []string{"slow", "connection"}, Run: waitCmd},
		{Name: "role", Arity: 1, Flags: NoScript | Loading | Stale | Fast,
			Categories: []string{"admin", "fast", "dangerous"}, Run: roleCmd},
	}
}

// waitArgs are WAIT's arguments.
type waitArgs struct {
	replicas  int64
	timeoutMs int64 // 0: for ever
}

// parseWait parses WAIT numreplicas timeout, in Redis 7.0's order of
// checks and with its errors.
func parseWait(args [][]byte) (waitArgs, error) {
	var w waitArgs
	var ok bool
	if w.replicas, ok = parseInt(args[1]); !ok {
		return w, ErrNotInteger
	}
	if w.timeoutMs, ok = parseInt(args[2]); !ok {
		return w, ErrTimeout
	}
	if w.timeoutMs < 0 {
		return w, ErrTimeoutNegative
	}
	return w, nil
}

// WAIT numreplicas timeout: this server has no replicas, so it answers as
// a standalone Redis 7.0 with none: 0 at once when no replica is asked
// for (or inside MULTI, where Redis does not block), else 0 once the
// timeout ran out (0: never), the client left, or CLIENT UNBLOCK ended
// it. It holds no store lock while it waits.
func waitCmd(x *Ctx) {
	w, err := parseWait(x.Args)
	if err != nil {
		x.Fail(err)
		return
	}
	if w.replicas <= 0 || x.InExec {
		x.W.Int(0)
		return
	}
	c, wr, s := x.Conn, x.W, x.S
	c.Block(func(gone <-chan struct{}) {
		timer, stop := s.blockTimer(w.timeoutMs)
		defer stop()
		unblock := c.Unblockable()
		var um resp.UnblockMode
		select {
		case <-gone:
		case <-timer:
		case um = <-unblock:
		}
		if m, ok := c.EndUnblockable(); ok {
			um = m
		}
		if um == resp.UnblockError {
			wr.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			return
		}
		wr.Int(0) // no replica acknowledged
	})
}

// ROLE: a master with no replicas, at replication offset 0 (INFO
// replication's master_repl_offset).
func roleCmd(x *Ctx) {
	x.W.Array(3)
	x.W.BulkString("master")
	x.W.Int(0)
	x.W.Array(0)
}
