package integration

// CLIENT UNBLOCK of ONCE waiters: what only oncekv can do (Redis has no
// ONCE commands to compare with).

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
)

const unblockedErr = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"

// TestOnceUnblock: CLIENT UNBLOCK wakes a client blocked in ONCE.WAIT or
// ONCE.CLAIM … WAIT: TIMEOUT (the default) with the reply of a wait that
// ran out, ERROR with -UNBLOCKED. The waiter leaves its key's line (KV-10):
// the waiting count drops, the run's answer later reaches the others and
// never the unblocked one, and a second UNBLOCK answers 0.
func TestOnceUnblock(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctl := DialRaw(t, addr)
	for i, tc := range []struct {
		name string
		cmd  []string // the blocking command, after its key
		mode []string // UNBLOCK's reason
		want string   // the unblocked client's reply: "running" or the raw error
	}{
		{"WAIT default", []string{"ONCE.WAIT"}, nil, "running"},
		{"WAIT TIMEOUT", []string{"ONCE.WAIT"}, []string{"TIMEOUT"}, "running"},
		{"WAIT ERROR", []string{"ONCE.WAIT"}, []string{"error"}, unblockedErr},
		{"CLAIM WAIT default", []string{"ONCE.CLAIM", "WAIT", "0"}, nil, "running"},
		{"CLAIM WAIT TIMEOUT", []string{"ONCE.CLAIM", "WAIT", "0"}, []string{"timeout"}, "running"},
		{"CLAIM WAIT ERROR", []string{"ONCE.CLAIM", "WAIT", "0"}, []string{"ERROR"}, unblockedErr},
		{"WAIT with TIMEOUT ms, ERROR", []string{"ONCE.WAIT", "TIMEOUT", "60000"}, []string{"ERROR"}, unblockedErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("u%d", i)
			tok := rawOnce(t, ctl, "ONCE.CLAIM", key, "LEASE", "30000").Token
			args := append([]string{tc.cmd[0], key}, tc.cmd[1:]...)
			var ws []*RawConn
			var ids []string
			for range 3 {
				c, id := blockedWaiter(t, addr, args...)
				ws, ids = append(ws, c), append(ids, id)
			}
			awaitWaiting(t, ctl, 3)
			victim := ws[0]
			wantRaw(t, ctl, ":1\r\n", append([]string{"CLIENT", "UNBLOCK", ids[0]}, tc.mode...)...)
			f := victim.ReadFrame()
			if tc.want == "running" {
				r, err := frameOnce(f)
				if err != nil || r.State != "running" || r.Ms <= 0 {
					t.Fatalf("unblocked waiter: %v %v, want [running >0]", r, err)
				}
			} else if string(f.Raw) != tc.want {
				t.Fatalf("unblocked waiter: %q, want %q", f.Raw, tc.want)
			}
			wantRaw(t, ctl, ":0\r\n", append([]string{"CLIENT", "UNBLOCK", ids[0]}, tc.mode...)...)
			awaitWaiting(t, ctl, 2)
			wantRaw(t, ctl, "+OK\r\n", "ONCE.COMPLETE", key, strconv.FormatInt(tok, 10), "answer")
			for i, c := range ws[1:] {
				if r, err := frameOnce(c.ReadFrame()); err != nil || r.State != "done" || r.Detail != "answer" {
					t.Fatalf("waiter %d: %v %v, want [done answer]", i+1, r, err)
				}
			}
			awaitWaiting(t, ctl, 0)
			// Its next reply is its own: the run's answer never came to it.
			wantRaw(t, victim, "+PONG\r\n", "PING")
			// Nor does UNBLOCK wake a client that is not blocked.
			wantRaw(t, ctl, ":0\r\n", "CLIENT", "UNBLOCK", ids[1])
		})
	}
}

// TestOnceUnblockHandover: a CLAIM … WAIT caller unblocked before its
// key's lease lapses is out of the line: the claim goes to the next
// waiter, with a new token (KV-13), and nothing comes to it.
func TestOnceUnblockHandover(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctl := DialRaw(t, addr)
	for _, mode := range []string{"TIMEOUT", "ERROR"} {
		t.Run(mode, func(t *testing.T) {
			key := "h-" + mode
			tok := rawOnce(t, ctl, "ONCE.CLAIM", key, "LEASE", "800").Token
			a, aid := blockedWaiter(t, addr, "ONCE.CLAIM", key, "WAIT", "0", "LEASE", "30000")
			awaitWaiting(t, ctl, 1)
			b, _ := blockedWaiter(t, addr, "ONCE.CLAIM", key, "WAIT", "0", "LEASE", "30000")
			awaitWaiting(t, ctl, 2)
			wantRaw(t, ctl, ":1\r\n", "CLIENT", "UNBLOCK", aid, mode)
			a.ReadFrame()
			awaitWaiting(t, ctl, 1)
			r, err := frameOnce(b.ReadFrame())
			if err != nil || r.State != "claimed" || r.Token <= tok {
				t.Fatalf("second waiter at the lapse: %v %v, want [claimed >%d]", r, err, tok)
			}
			wantRaw(t, a, "+PONG\r\n", "PING")
			wantRaw(t, b, "+OK\r\n", "ONCE.COMPLETE", key, strconv.FormatInt(r.Token, 10), "b")
			awaitWaiting(t, ctl, 0)
		})
	}
}

// TestOnceUnblockRace: UNBLOCKs from many goroutines race the run's
// COMPLETE. Whatever wins, each waiter gets one reply that agrees with
// its UNBLOCK's answer, nothing after it, nobody is handed a claim (one
// runner, KV-9), and no waiter is left counted.
func TestOnceUnblockRace(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctl := DialRaw(t, addr)
	for round := range 5 {
		key := fmt.Sprintf("r%d", round)
		tok := rawOnce(t, ctl, "ONCE.CLAIM", key, "LEASE", "30000").Token
		const n = 12
		ws := make([]*RawConn, n)
		ids := make([]string, n)
		for i := range ws {
			args := []string{"ONCE.CLAIM", key, "WAIT", "0"}
			if i%3 == 0 {
				args = []string{"ONCE.WAIT", key}
			}
			ws[i], ids[i] = blockedWaiter(t, addr, args...)
		}
		awaitWaiting(t, ctl, n)
		answers := make([]string, n)
		var wg sync.WaitGroup
		for i := range n / 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := dialRaw(addr)
				if err != nil {
					answers[i] = err.Error()
					return
				}
				defer c.Close()
				mode := []string{"TIMEOUT", "ERROR"}[i%2]
				b, err := c.TryDo("CLIENT", "UNBLOCK", ids[i], mode)
				answers[i] = string(b) + fmt.Sprint(err)
			}()
		}
		wantRaw(t, ctl, "+OK\r\n", "ONCE.COMPLETE", key, strconv.FormatInt(tok, 10), "ans")
		wg.Wait()
		for i, c := range ws {
			f := c.ReadFrame()
			r, _ := frameOnce(f)
			switch {
			case i >= n/2 || answers[i] == ":0\r\n<nil>":
				if r.State != "done" || r.Detail != "ans" {
					t.Fatalf("round %d waiter %d (UNBLOCK %q): %q, want [done ans]", round, i, answers[i], f.Raw)
				}
			case answers[i] != ":1\r\n<nil>":
				t.Fatalf("round %d: UNBLOCK of waiter %d: %q", round, i, answers[i])
			case i%2 == 1:
				if string(f.Raw) != unblockedErr {
					t.Fatalf("round %d waiter %d (UNBLOCK ERROR: 1): %q", round, i, f.Raw)
				}
			default:
				// TIMEOUT: a timed-out wait's reply, which is the answer
				// if the COMPLETE came first.
				if r.State != "running" && r.State != "done" {
					t.Fatalf("round %d waiter %d (UNBLOCK TIMEOUT: 1): %q", round, i, f.Raw)
				}
			}
			wantRaw(t, c, "+PONG\r\n", "PING")
		}
		awaitWaiting(t, ctl, 0)
		if r := rawOnce(t, ctl, "ONCE.CLAIM", key); r.State != "done" || r.Detail != "ans" {
			t.Fatalf("round %d: CLAIM after: %v, want the kept answer", round, r)
		}
	}
}
