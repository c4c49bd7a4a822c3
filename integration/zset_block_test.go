package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
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
	const producers, consumers, jobs = 3, 5, 300
	var wg sync.WaitGroup
	for pi := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := DialRaw(t, addr)
			defer c.Close()
			for j := range jobs {
				if r := c.Do("ZADD", "jobs", fmt.Sprint(j), fmt.Sprintf("p%d:%d", pi, j)); string(r) != ":1\r\n" {
					t.Errorf("ZADD: %q", r)
					return
				}
			}
		}()
	}
	// The consumers stop once they found nothing 3 times in a row after
	// the producers are done: short timeouts alone could stop them early
	// on a slow machine.
	var produced atomic.Bool
	type got struct{ consumer, job string }
	out := make(chan got, producers*jobs)
	var cwg sync.WaitGroup
	for ci := range consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			c := DialRaw(t, addr)
			defer c.Close()
			name := fmt.Sprint("c", ci)
			idle := 0
			for idle < 3 {
				var popped []string
				switch ci % 3 {
				case 0, 1:
					cmd := []string{"BZPOPMIN", "other", "jobs", "0.02"}
					if ci%3 == 1 {
						cmd[0] = "BZPOPMAX"
					}
					f := c.ReadFrameAfterDo(t, cmd...)
					if !f.Null {
						if len(f.Elems) != 3 || f.Elems[0].Str != "jobs" {
							t.Errorf("%s: %q", cmd[0], f.Raw)
							return
						}
						popped = append(popped, f.Elems[1].Str)
					}
				default:
					f := c.ReadFrameAfterDo(t, "BZMPOP", "0.02", "2", "other", "jobs", "MIN", "COUNT", "3")
					if !f.Null {
						if len(f.Elems) != 2 || f.Elems[0].Str != "jobs" {
							t.Errorf("BZMPOP: %q", f.Raw)
							return
						}
						for _, e := range f.Elems[1].Elems {
							popped = append(popped, e.Elems[0].Str)
						}
					}
				}
				if len(popped) == 0 {
					if produced.Load() {
						idle++
					}
					continue
				}
				idle = 0
				for _, p := range popped {
					out <- got{name, p}
				}
			}
		}()
	}
	wg.Wait()
	produced.Store(true)
	cwg.Wait()
	close(out)
	seen := map[string]string{}
	for g := range out {
		if prev, dup := seen[g.job]; dup {
			t.Errorf("member %s delivered twice (to %s and %s)", g.job, prev, g.consumer)
		}
		seen[g.job] = g.consumer
	}
	if len(seen) != producers*jobs {
		t.Errorf("%d members delivered, want %d", len(seen), producers*jobs)
	}
	c := DialRaw(t, addr)
	if r := string(c.Do("EXISTS", "jobs", "other")); r != ":0\r\n" {
		t.Errorf("EXISTS of the emptied set: %q", r)
	}
}
