package integration

import (
	"fmt"
	"testing"
)

// TestZsetQueue: producers ZADD members to one sorted set while consumers
// pop them in BZPOPMIN, BZPOPMAX and BZMPOP with short timeouts, so that
// timeouts often fall in the instant a write serves them. Every member
// is delivered once (none lost to a waiter that timed out as it was
// served, none twice), and the emptied set is gone.
func TestZsetQueue(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	push := func(c *RawConn, producer, job int) bool {
		if r := c.Do("ZADD", "jobs", fmt.Sprint(job), fmt.Sprintf("p%d:%d", producer, job)); string(r) != ":1\r\n" {
			t.Errorf("ZADD: %q", r)
			return false
		}
		return true
	}
	pop := func(c *RawConn, consumer int) []string {
		var popped []string
		switch consumer % 3 {
		case 0, 1:
			cmd := []string{"BZPOPMIN", "other", "jobs", "0.02"}
			if consumer%3 == 1 {
				cmd[0] = "BZPOPMAX"
			}
			f := c.ReadFrameAfterDo(t, cmd...)
			if !f.Null {
				if len(f.Elems) != 3 || f.Elems[0].Str != "jobs" {
					t.Errorf("%s: %q", cmd[0], f.Raw)
					return nil
				}
				popped = append(popped, f.Elems[1].Str)
			}
		default:
			f := c.ReadFrameAfterDo(t, "BZMPOP", "0.02", "2", "other", "jobs", "MIN", "COUNT", "3")
			if !f.Null {
				if len(f.Elems) != 2 || f.Elems[0].Str != "jobs" {
					t.Errorf("BZMPOP: %q", f.Raw)
					return nil
				}
				for _, e := range f.Elems[1].Elems {
					popped = append(popped, e.Elems[0].Str)
				}
			}
		}
		return popped
	}
	runQueue(t, addr, 3, 5, 300, push, pop)
	c := DialRaw(t, addr)
	if r := string(c.Do("EXISTS", "jobs", "other")); r != ":0\r\n" {
		t.Errorf("EXISTS of the emptied set: %q", r)
	}
}
