package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
)

// TestSwapDBBringsAnotherRunUnderWaiters: after a SWAPDB, a CLAIM … WAIT
// caller waits on its key in its own database, where it finds the run
// the other database held (once.Engine's Swapped). That run is another
// request's when its fingerprint differs: the caller gets -MISMATCH, as a
// CLAIM of that run would (KV-15), not the other request's answer; and a
// claim handed over at that run's lapse keeps that run's fingerprint, not
// the one of the run the caller had joined (KV-13).
func TestSwapDBBringsAnotherRunUnderWaiters(t *testing.T) {
	t.Parallel()
	claimed := "*2\r\n$7\r\nclaimed\r\n:"
	for _, tc := range []struct {
		name   string
		fpA    []string // the FINGERPRINT arguments of db 0's run
		waitFP []string // the waiter's
		// then is run on db 0 after the swap, and want is the waiter's
		// reply (a prefix).
		then []string
		want string
		// status, when set, is in ONCE.STATUS k after it.
		status string
		// done1 completes db 1's run before the swap: its kept answer
		// is what the waiter finds.
		done1 bool
	}{
		{"the waiter's fingerprint differs", []string{"FINGERPRINT", "A"}, []string{"FINGERPRINT", "A"},
			nil, "-MISMATCH", "", false},
		{"the same fingerprint: it waits and gets the answer", nil, []string{"FINGERPRINT", "B"},
			[]string{"ONCE.COMPLETE", "k", "TOK", "b-answer"}, "*2\r\n$4\r\ndone\r\n$8\r\nb-answer\r\n", "", false},
		{"no fingerprint: the heir gets the run's own", []string{"FINGERPRINT", "A"}, nil,
			[]string{"DEL", "k"}, claimed, "$11\r\nfingerprint\r\n$1\r\nB\r\n", false},
		{"a kept answer of another request", []string{"FINGERPRINT", "A"}, []string{"FINGERPRINT", "A"},
			nil, "-MISMATCH", "", true},
		{"a kept answer, no fingerprint: the waiter gets it", []string{"FINGERPRINT", "A"}, nil,
			nil, "*2\r\n$4\r\ndone\r\n$8\r\nb-answer\r\n", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := onceServer(t)
			watched := make(chan struct{}, 1)
			srv.onceWatched = func() { watched <- struct{}{} }
			c0 := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			c1 := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			send(srv, c1, "SELECT", "1")
			r := send(srv, c1, "ONCE.CLAIM", "k", "LEASE", "60000", "FINGERPRINT", "B")
			if !strings.HasPrefix(r, claimed) {
				t.Fatalf("claim in db 1: %q", r)
			}
			tokB := strings.TrimSuffix(strings.TrimPrefix(r, claimed), "\r\n")
			if tc.done1 {
				if r := send(srv, c1, "ONCE.COMPLETE", "k", tokB, "b-answer"); r != "+OK\r\n" {
					t.Fatalf("complete in db 1: %q", r)
				}
			}
			if r := send(srv, c0, append([]string{"ONCE.CLAIM", "k", "LEASE", "60000"}, tc.fpA...)...); !strings.HasPrefix(r, claimed) {
				t.Fatalf("claim in db 0: %q", r)
			}
			w := startBlocked(t, srv, append([]string{"ONCE.CLAIM", "k", "WAIT", "0", "LEASE", "60000"}, tc.waitFP...)...)
			select {
			case <-watched:
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter never started to wait")
			}
			if r := send(srv, c0, "SWAPDB", "0", "1"); r != "+OK\r\n" {
				t.Fatalf("SWAPDB: %q", r)
			}
			if tc.then != nil {
				then := append([]string(nil), tc.then...)
				for i, a := range then {
					if a == "TOK" {
						then[i] = tokB
					}
				}
				send(srv, c0, then...)
			}
			if out := w.reply(t, 5*time.Second, "the waiter"); !strings.HasPrefix(out, tc.want) {
				t.Fatalf("waiter after SWAPDB: %q, want %q…", out, tc.want)
			}
			if tc.status != "" {
				if st := send(srv, c0, "ONCE.STATUS", "k"); !strings.Contains(st, tc.status) {
					t.Errorf("ONCE.STATUS after the handover: %q, want %q in it", st, tc.status)
				}
			}
		})
	}
}
