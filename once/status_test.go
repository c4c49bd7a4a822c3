package once_test

import (
	"sync"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
)

// pauseSwitch is a hold (Engine.SetHold) that a test turns on and off, as
// CLIENT PAUSE and its end do.
type pauseSwitch struct {
	mu sync.Mutex
	ch chan struct{} // nil: not paused
}

func (p *pauseSwitch) hold() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		return nil
	}
	return p.ch
}

func (p *pauseSwitch) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.ch == nil:
		p.ch = make(chan struct{})
	case !on && p.ch != nil:
		close(p.ch)
		p.ch = nil
	}
}

// TestStatusOfALapseAPauseDefers: a lease that lapses while the engine's
// own writes are held (CLIENT PAUSE) is handed over only when the hold
// ends (KV-13); meanwhile ONCE.STATUS tells what is true: the key is
// running still, with the old token, no lease left and its waiters, not
// free (nil) while a CLAIM … WAIT caller still waits for it. With no
// waiter left, the lapsed key is free.
func TestStatusOfALapseAPauseDefers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    once.ClaimArgs
		waiters []bool // claim (true) or ONCE.WAIT (false) callers
		wantFP  string
	}{
		{"claim waiter, fingerprint", once.ClaimArgs{Lease: 100, FP: []byte("fp1"), HasFP: true}, []bool{true, false}, "fp1"},
		{"claim waiter, no fingerprint", once.ClaimArgs{Lease: 100}, []bool{false, true}, ""},
		{"only ONCE.WAIT callers", once.ClaimArgs{Lease: 100}, []bool{false}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := openEnv(t, "", 30*time.Second)
			var p pauseSwitch
			v.e.SetHold(p.hold)
			tok := v.mustClaim("k", c.args)
			var ws []*once.Waiter
			for _, claim := range c.waiters {
				ws = append(ws, v.waiter("k", claim, once.ClaimArgs{Lease: 30000}))
			}
			p.set(true)
			time.Sleep(300 * time.Millisecond) // past the 100 ms lease
			for _, w := range ws {
				quiet(t, w, 0, "lapse during a pause")
			}
			st, ok := v.status("k")
			if !ok || st.State != once.Running || st.Token != tok || st.LeaseMs != 0 || st.KeepMs != -1 ||
				st.Waiters != len(ws) || st.HasFP != (c.wantFP != "") || string(st.Fingerprint) != c.wantFP {
				t.Fatalf("STATUS of a lapse the pause defers: ok=%v %+v, want running, token %d, lease-ms 0, keep-ms -1, %d waiters, fingerprint %q",
					ok, st, tok, len(ws), c.wantFP)
			}
			p.set(false)
			heir := -1
			for i, claim := range c.waiters {
				if claim && heir < 0 {
					heir = i
				}
			}
			for i, w := range ws {
				if i == heir {
					r := recv(t, w, 2*time.Second)
					wantState(t, "heir after the pause", r, "claimed", "")
					st, ok := v.status("k")
					if !ok || st.Token != r.Token || st.Token <= tok || st.LeaseMs <= 0 {
						t.Fatalf("STATUS after the handover: ok=%v %+v, want the heir's token %d and its lease", ok, st, r.Token)
					}
				}
			}
			if heir < 0 {
				wantState(t, "ONCE.WAIT after the pause", recv(t, ws[0], 2*time.Second), "free", "")
				if st, ok := v.status("k"); ok {
					t.Fatalf("STATUS once the lapse freed the key: %+v, want nil", st)
				}
			}
		})
	}
}
