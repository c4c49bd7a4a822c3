package once_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
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

// refusingStore is a store that, while refuse is set, refuses whole
// transactions (as the Badger store does while its disk is full,
// store.ErrWrite), or with setsOnly the writes inside them.
type refusingStore struct {
	*badgerdb.DB
	setsOnly bool
	refuse   atomic.Bool
	refused  atomic.Int32
}

var errRefused = fmt.Errorf("%w: no space left on device (injected)", store.ErrWrite)

func (s *refusingStore) Update(fn func(store.Tx) error) (store.Ticket, error) {
	if !s.refuse.Load() {
		return s.DB.Update(fn)
	}
	if !s.setsOnly {
		s.refused.Add(1)
		return nil, errRefused
	}
	return s.DB.Update(func(tx store.Tx) error { return fn(refusingTx{tx, s}) })
}

// refusingEnv is an env whose engine runs over a refusingStore (the
// env's own transactions bypass it).
func refusingEnv(t *testing.T, setsOnly bool) (*env, *refusingStore) {
	t.Helper()
	v := openEnv(t, "", 30*time.Second)
	rs := &refusingStore{DB: v.st, setsOnly: setsOnly}
	e := once.New(rs, once.Config{DefaultLease: 30 * time.Second})
	v.e.Close()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	v.e = e // closed by the env
	return v, rs
}

// awaitRefusal waits until the store refused something.
func (s *refusingStore) awaitRefusal(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.refused.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s.refused.Load() == 0 {
		t.Fatal("the lapse never reached the store")
	}
}

type refusingTx struct {
	store.Tx
	s *refusingStore
}

func (t refusingTx) Set(db int, key []byte, v store.Value) error {
	t.s.refused.Add(1)
	return errRefused
}

// TestLapseRefusedByTheStoreIsTriedAgain (KV-13): a lease that lapses
// while the store refuses writes (a full disk) cannot be handed over then.
// Its waiter, which no one else may wake, gets the claim once the store
// writes again: the lapse is tried again, not dropped, and a heir whose
// handover could not be written stays first in line.
func TestLapseRefusedByTheStoreIsTriedAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		setsOnly bool
	}{
		{"transactions refused", false},
		{"the handover's write refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, rs := refusingEnv(t, tc.setsOnly)
			v.mustClaim("k", lease(150))
			w := v.waiter("k", true, lease(5000))
			rs.refuse.Store(true)
			rs.awaitRefusal(t)
			select {
			case r := <-w.C():
				t.Fatalf("the waiter was answered while the store refused writes: %+v", r)
			case <-time.After(100 * time.Millisecond):
			}
			rs.refuse.Store(false)
			wantState(t, "the waiter, once the store writes again", recv(t, w, 3*time.Second), "claimed", "")
		})
	}
}
