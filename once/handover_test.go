package once_test

import (
	"errors"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
)

// TestHandoverFingerprintReachesOtherWaiters: waiters may join a running
// record that has no fingerprint with different fingerprints of their
// own. Once a handover gives the record the heir's fingerprint (X), a
// waiter whose fingerprint differs (Y) is a CLAIM whose fingerprint
// differs from the running claim's: it gets -MISMATCH then, not X's
// answer ("an idempotency key reused for a different request is an error,
// not someone else's receipt") nor X's claim (KV-15, KV-13).
func TestHandoverFingerprintReachesOtherWaiters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// then is what the heir X does with its claim.
		then func(t *testing.T, v *env, tok uint64)
	}{
		{"heir completes", func(t *testing.T, v *env, tok uint64) {
			if err := v.complete("k", tok, "receipt-of-X", -1); err != nil {
				t.Fatalf("heir's COMPLETE: %v", err)
			}
		}},
		{"heir completes with KEEP 0", func(t *testing.T, v *env, tok uint64) {
			if err := v.complete("k", tok, "receipt-of-X", 0); err != nil {
				t.Fatalf("heir's COMPLETE: %v", err)
			}
		}},
		{"heir's lease lapses too", func(t *testing.T, v *env, tok uint64) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := openEnv(t, "", 30*time.Second)
			v.mustClaim("k", lease(200)) // no fingerprint
			wx := v.waiter("k", true, once.ClaimArgs{Lease: 300, FP: []byte("X"), HasFP: true})
			wy := v.waiter("k", true, once.ClaimArgs{Lease: 5000, FP: []byte("Y"), HasFP: true})
			ww := v.waiter("k", false, once.ClaimArgs{})
			rx := recv(t, wx, 2*time.Second)
			wantState(t, "heir X", rx, "claimed", "")
			if st, _ := v.status("k"); !st.HasFP || string(st.Fingerprint) != "X" {
				t.Fatalf("record after handover: %+v, want fingerprint X", st)
			}
			c.then(t, v, rx.Token)
			ry := recv(t, wy, 2*time.Second)
			if !errors.Is(ry.Err, once.ErrMismatch) {
				t.Fatalf("waiter Y after the record took X's fingerprint: state=%q answer=%q err=%v, want ErrMismatch",
					ry.State, ry.Answer, ry.Err)
			}
			// The ONCE.WAIT caller carries no fingerprint: unaffected.
			rw := recv(t, ww, 2*time.Second)
			if rw.Err != nil {
				t.Fatalf("WAIT waiter: %+v", rw)
			}
		})
	}
}
