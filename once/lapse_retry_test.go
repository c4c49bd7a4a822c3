package once_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/store"
)

// TestCloseWhileTheStoreRefusesWakesWaitersAndStopsRetrying (KV-13): a
// lapse that the store refuses is tried again every lapseRetry. Close must
// still end that: it wakes the waiters with ErrShutdown and stops the
// timers, though the store refuses its transaction too (a full disk, or
// the store closed first), and no lapse is tried after it.
func TestCloseWhileTheStoreRefusesWakesWaitersAndStopsRetrying(t *testing.T) {
	t.Parallel()
	v, rs := refusingEnv(t, false)
	v.mustClaim("k", lease(100))
	w := v.waiter("k", true, lease(5000))
	rs.refuse.Store(true)
	rs.awaitRefusal(t)
	v.e.Close()
	r := recv(t, w, 2*time.Second)
	if !errors.Is(r.Err, once.ErrShutdown) {
		t.Fatalf("waiter after Close: %+v, want ErrShutdown", r)
	}
	n := rs.refused.Load()
	time.Sleep(1200 * time.Millisecond) // more than two retries
	if m := rs.refused.Load(); m != n {
		t.Fatalf("the lapse was tried %d more times after Close", m-n)
	}
	rs.refuse.Store(false)
}

// TestHeirWhoseFingerprintIsTooLongDoesNotWedgeTheKey (KV-13, KV-5): a
// CLAIM … WAIT whose fingerprint is too long to be stored may join a
// running record that has none. At the lapse it is the heir, and the
// handover's write is refused (store.ErrValueTooLong) — not for a while,
// as a full disk, but for good. The heir must get that error and the claim
// pass to the next waiter, not be retried forever with the key wedged.
func TestHeirWhoseFingerprintIsTooLongDoesNotWedgeTheKey(t *testing.T) {
	t.Parallel()
	v := openEnv(t, "", 30*time.Second)
	huge := bytes.Repeat([]byte("f"), store.MaxValueLen)
	v.mustClaim("k", lease(500)) // no fingerprint
	w1 := v.waiter("k", true, once.ClaimArgs{Lease: 5000, FP: huge, HasFP: true})
	w2 := v.waiter("k", true, lease(5000))
	r1 := recv(t, w1, 3*time.Second)
	if !errors.Is(r1.Err, store.ErrValueTooLong) {
		t.Fatalf("heir with a too-long fingerprint: %+v, want ErrValueTooLong", r1)
	}
	wantState(t, "the next waiter", recv(t, w2, 3*time.Second), "claimed", "")
}

// TestCancelWhileTheStoreRefusesWithdrawsTheWaiter (KV-13): a waiter whose
// client went away (or whose wait ran out) is withdrawn by Cancel, in a
// transaction of its own. While the store refuses transactions that one
// never ran, and the waiter stayed in line: once the store wrote again,
// the next lapse handed the claim to it, no one ran it, and the key was
// held for the gone waiter's whole lease.
func TestCancelWhileTheStoreRefusesWithdrawsTheWaiter(t *testing.T) {
	t.Parallel()
	v, rs := refusingEnv(t, false)
	e := v.e
	v.mustClaim("k", lease(400))
	w := v.waiter("k", true, lease(60_000))
	rs.refuse.Store(true)
	if r, ok := e.Cancel(w, true); ok {
		t.Fatalf("Cancel: the waiter had a result already: %+v", r)
	}
	rs.refuse.Store(false)
	if st, _ := v.status("k"); st.Waiters != 0 {
		t.Fatalf("after Cancel: %d waiters, want 0", st.Waiters)
	}
	time.Sleep(600 * time.Millisecond) // the runner's lease lapses
	r, _, err := v.claim("k", lease(1000))
	if err != nil || r.State != "claimed" {
		t.Fatalf("CLAIM after the runner's lease lapsed: %+v %v, want claimed (not held by the gone waiter)", r, err)
	}
}
