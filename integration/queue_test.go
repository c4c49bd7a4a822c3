package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// delivery is one job a consumer of runQueue took.
type delivery struct{ consumer, job string }

// runQueue runs a job queue against addr: producers, each on a connection
// of its own, push jobs 0..jobs-1 (push reports false to stop, having
// said why); consumers take them with pop, which answers the jobs one
// blocking command took (none when it timed out). A consumer stops once
// it found nothing three times in a row after the producers were done,
// so that short timeouts do not stop it early on a slow machine.
// runQueue returns every delivery, each consumer's in the order it got
// them, after checking that none was delivered twice and none lost.
func runQueue(t *testing.T, addr string, producers, consumers, jobs int,
	push func(c *RawConn, producer, job int) bool, pop func(c *RawConn, consumer int) []string) []delivery {
	t.Helper()
	var wg sync.WaitGroup
	for pi := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := DialRaw(t, addr)
			defer c.Close()
			for j := range jobs {
				if !push(c, pi, j) {
					return
				}
			}
		}()
	}
	var produced atomic.Bool
	out := make(chan delivery, producers*jobs)
	var cwg sync.WaitGroup
	for ci := range consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			c := DialRaw(t, addr)
			defer c.Close()
			for idle := 0; idle < 3; {
				got := pop(c, ci)
				if len(got) == 0 {
					if produced.Load() {
						idle++
					}
					continue
				}
				idle = 0
				for _, job := range got {
					out <- delivery{fmt.Sprint("c", ci), job}
				}
			}
		}()
	}
	wg.Wait()
	produced.Store(true)
	cwg.Wait()
	close(out)
	var all []delivery
	seen := map[string]string{}
	for d := range out {
		if prev, dup := seen[d.job]; dup {
			t.Errorf("job %s delivered twice (to %s and %s)", d.job, prev, d.consumer)
		}
		seen[d.job] = d.consumer
		all = append(all, d)
	}
	if len(seen) != producers*jobs {
		t.Errorf("%d jobs delivered, want %d", len(seen), producers*jobs)
	}
	return all
}
