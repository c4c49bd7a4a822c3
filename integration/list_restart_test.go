package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestListRestart: lists survive a graceful restart and a kill -9 under
// appendfsync always, elements, order and deadline; and an element a
// BRPOP or BLMOVE popped and was answered with is never popped again
// after the crash (KV-6's promise applied to a queue), while consumers
// pop as fast as they can when the kill lands.
func TestListRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		down func(*Oncekv, testing.TB)
	}{
		{"graceful", (*Oncekv).Stop},
		{"kill9", (*Oncekv).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := StartOncekv(t, "--appendfsync", "always")
			c := DialRaw(t, o.Addr)
			const jobs = 400
			push := []string{"RPUSH", "q"}
			for i := range jobs {
				push = append(push, fmt.Sprint("job", i))
			}
			for _, args := range [][]string{push, {"RPUSH", "log", "a", "b\x00\r\n", ""}, {"PEXPIREAT", "log", farFutureMs}} {
				if got := c.Do(args...); got[0] != ':' {
					t.Fatalf("%s: %q", fmtArgs(args), got)
				}
			}
			// obj is a list kept as a store object (600 elements), changed
			// at both ends and in the middle: after the restart it holds
			// want, in order.
			objPush := []string{"RPUSH", "obj"}
			for i := range 600 {
				objPush = append(objPush, fmt.Sprint("o", i))
			}
			for _, args := range [][]string{objPush, {"LPOP", "obj", "50"}, {"RPOP", "obj", "50"},
				{"LPUSH", "obj", "h1", "h2"}, {"RPUSH", "obj", "t1"}, {"LSET", "obj", "10", "ten"}, {"LTRIM", "obj", "1", "-2"},
				{"LINSERT", "obj", "BEFORE", "o300", "ins"}, {"LREM", "obj", "1", "o400"}} {
				if got := c.Do(args...); got[0] == '-' {
					t.Fatalf("%s: %q", fmtArgs(args), got)
				}
			}
			want := []string{"h1"}
			for i := 50; i < 550; i++ {
				switch {
				case i == 58:
					want = append(want, "ten")
				case i == 300:
					want = append(want, "ins", "o300")
				case i != 400:
					want = append(want, fmt.Sprint("o", i))
				}
			}
			wantObj := string(c.Do("LRANGE", "obj", "0", "-1"))
			if wantObj != string(EncodeCommand(want...)) {
				t.Fatalf("LRANGE obj before the restart: %.200q", wantObj)
			}
			// Consumers pop until the server goes down; what they were
			// answered with was popped for good.
			var mu sync.Mutex
			popped := map[string]bool{}
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cc := DialRaw(t, o.Addr)
					for {
						var f *Frame
						var err error
						if w == 0 {
							f, err = cc.TryReadFrameAfter(EncodeCommand("BLMOVE", "q", "done", "LEFT", "RIGHT", "1"))
						} else {
							f, err = cc.TryReadFrameAfter(EncodeCommand("BRPOP", "q", "1"))
						}
						if err != nil || f.Null {
							return
						}
						job := f.Str
						if f.Type == '*' {
							job = f.Elems[1].Str
						}
						mu.Lock()
						popped[job] = true
						mu.Unlock()
					}
				}()
			}
			time.Sleep(30 * time.Millisecond)
			tc.down(o, t)
			wg.Wait()
			o = o.Restart(t)
			c = DialRaw(t, o.Addr)
			left := c.ReadFrameAfterDo(t, "LRANGE", "q", "0", "-1")
			done := c.ReadFrameAfterDo(t, "LRANGE", "done", "0", "-1")
			seen := map[string]bool{}
			for _, e := range left.Elems {
				if popped[e.Str] {
					t.Errorf("%s: %s was popped and answered, and is in the queue again", tc.name, e.Str)
				}
				seen[e.Str] = true
			}
			for _, e := range done.Elems {
				seen[e.Str] = true
			}
			for job := range popped {
				seen[job] = true
			}
			// A BRPOP whose pop was durable when the server went down
			// (killed, or closing its connections at a SIGTERM) before
			// its reply was sent lost its job, as Redis loses a reply it
			// had not sent (README, "Lists"): at most one per BRPOP
			// consumer. BLMOVE's jobs are in done, never lost.
			lost := jobs - len(seen)
			if lost < 0 || lost > 2 {
				t.Errorf("%s: %d distinct jobs accounted for, want %d (%d lost)", tc.name, len(seen), jobs, lost)
			}
			// What is left is in the order it was pushed.
			last := -1
			for _, e := range left.Elems {
				var n int
				fmt.Sscanf(strings.TrimPrefix(e.Str, "job"), "%d", &n)
				if n <= last {
					t.Errorf("%s: the queue is out of order after the restart: %s after job%d", tc.name, e.Str, last)
				}
				last = n
			}
			if got := string(c.Do("LRANGE", "log", "0", "-1")); got != "*3\r\n$1\r\na\r\n$4\r\nb\x00\r\n\r\n$0\r\n\r\n" {
				t.Errorf("%s: LRANGE log: %q", tc.name, got)
			}
			if got := string(c.Do("PEXPIRETIME", "log")); got != ":"+farFutureMs+"\r\n" {
				t.Errorf("%s: PEXPIRETIME log: %q", tc.name, got)
			}
			if got := string(c.Do("LRANGE", "obj", "0", "-1")); got != wantObj {
				t.Errorf("%s: LRANGE obj after the restart: %.200q, want %.200q", tc.name, got, wantObj)
			}
			if got := string(c.Do("TYPE", "q")); len(left.Elems) > 0 && got != "+list\r\n" {
				t.Errorf("%s: TYPE q: %q", tc.name, got)
			}
		})
	}
}
