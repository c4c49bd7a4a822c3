package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestOnceRestoreOverARecord: RESTORE … REPLACE over a running ONCE
// record does exactly what SET over it does, both replacing the record
// with a string: the run's waiter is answered at once (with WRONGTYPE, the
// key holding a string now), not at the lease deadline, the runner's
// COMPLETE finds a string, and the key stays a string (RESTORE never makes
// a record).
func TestOnceRestoreOverARecord(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	payload := rdbPayload("\x00\x01v", 10)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c, w := onceClient(t, addr, proto), onceClient(t, addr, proto)
		outcome := func(over ...any) string {
			t.Helper()
			k := fmt.Sprint(over[1])
			tok := onceClaim(t, ctx, c, k, "LEASE", 30000)
			waiter := asyncOnce(ctx, w, "ONCE.WAIT", k, "TIMEOUT", 20000)
			onceAwaitWaiters(t, ctx, c, k, 1)
			if err := c.Do(ctx, over...).Err(); err != nil {
				t.Fatalf("%v over a running record: %v", over[0], err)
			}
			var woke string
			select {
			case o := <-waiter:
				woke = fmt.Sprintf("%v %v", o.r, o.err)
			case <-time.After(5 * time.Second):
				t.Fatalf("%v over a running record: its waiter is not answered within 5 s", over[0])
			}
			complete := c.Do(ctx, "ONCE.COMPLETE", k, tok, "late").Err()
			typ, _ := c.Type(ctx, k).Result()
			get, _ := c.Get(ctx, k).Result()
			return fmt.Sprintf("waiter: %s; COMPLETE: %v; TYPE %s; GET %q", woke, complete, typ, get)
		}
		p := fmt.Sprintf("restore:%d:", proto)
		set := outcome("SET", p+"set", "v")
		restore := outcome("RESTORE", p+"restore", 0, payload, "REPLACE")
		if set != restore {
			t.Fatalf("over a running record:\n SET:     %s\n RESTORE: %s", set, restore)
		}
		t.Logf("over a running record, SET and RESTORE: %s", restore)
	})
}
