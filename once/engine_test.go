package once_test

// Unit tests of the ONCE engine over a real Badger store (KV-8, KV-12..KV-16
// at the engine's level). Every engine call runs inside st.Update, and the
// function returned by e.Commit() is called with the transaction's ticket
// after it, exactly as commands/once.go does.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// env is an engine over a store in dir.
type env struct {
	t   *testing.T
	dir string
	st  *badgerdb.DB
	e   *once.Engine
}

// openEnv opens a store in dir (a fresh one when dir is "") and starts an
// engine with a default lease of lease. Cleanup closes both (engine first).
func openEnv(t *testing.T, dir string, lease time.Duration) *env {
	t.Helper()
	return startEnv(t, dir, lease, false, nil)
}

// startEnv is openEnv, starting the engine first when engineFirst is set,
// as the server does (app.Start), with between(v) run after the engine's
// Start and before the store's.
func startEnv(t *testing.T, dir string, lease time.Duration, engineFirst bool, between func(v *env)) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := badgerdb.Open(badgerdb.DefaultOptions(dir))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if !engineFirst {
		st.Start()
	}
	e := once.New(st, once.Config{DefaultLease: lease})
	if err := e.Start(); err != nil {
		st.Close()
		t.Fatalf("start engine: %v", err)
	}
	v := &env{t: t, dir: dir, st: st, e: e}
	t.Cleanup(v.close)
	if between != nil {
		between(v)
	}
	if engineFirst {
		st.Start()
	}
	return v
}

// close closes the engine, then the store (idempotent).
func (v *env) close() {
	if v.st == nil {
		return
	}
	v.e.Close()
	if err := v.st.Close(); err != nil {
		v.t.Errorf("close store: %v", err)
	}
	v.st = nil
}

// update runs fn in an exclusive transaction and delivers the wake-ups it
// caused with the transaction's ticket.
func (v *env) update(fn func(tx store.Tx)) {
	v.t.Helper()
	var after func(store.Ticket)
	t, err := v.st.Update(func(tx store.Tx) error {
		fn(tx)
		after = v.e.Commit()
		return nil
	})
	if err != nil {
		v.t.Fatalf("update: %v", err)
	}
	if after != nil {
		after(t)
	}
}

func (v *env) claim(key string, a once.ClaimArgs) (once.Result, *once.Waiter, error) {
	v.t.Helper()
	var (
		r   once.Result
		w   *once.Waiter
		err error
	)
	v.update(func(tx store.Tx) { r, w, err = v.e.Claim(tx, 0, []byte(key), a) })
	return r, w, err
}

// mustClaim claims a free key and returns the token.
func (v *env) mustClaim(key string, a once.ClaimArgs) uint64 {
	v.t.Helper()
	r, w, err := v.claim(key, a)
	if err != nil || w != nil || r.State != "claimed" {
		v.t.Fatalf("CLAIM %s: got %+v waiter=%v err=%v, want claimed", key, r, w != nil, err)
	}
	if r.Token == 0 {
		v.t.Fatalf("CLAIM %s: token 0", key)
	}
	return r.Token
}

// waiter registers a blocking CLAIM … WAIT (claim) or WAIT caller.
func (v *env) waiter(key string, claim bool, a once.ClaimArgs) *once.Waiter {
	v.t.Helper()
	var (
		r   once.Result
		w   *once.Waiter
		err error
	)
	if claim {
		a.Wait = true
		r, w, err = v.claim(key, a)
	} else {
		v.update(func(tx store.Tx) { r, w, err = v.e.Wait(tx, 0, []byte(key), true) })
	}
	if err != nil || w == nil {
		v.t.Fatalf("wait on %s (claim=%v): got %+v err=%v, want a waiter", key, claim, r, err)
	}
	return w
}

func (v *env) complete(key string, tok uint64, answer string, keep int64) error {
	v.t.Helper()
	var err error
	v.update(func(tx store.Tx) { err = v.e.Complete(tx, 0, []byte(key), tok, []byte(answer), keep) })
	return err
}

func (v *env) abort(key string, tok uint64, msg string) error {
	v.t.Helper()
	var err error
	v.update(func(tx store.Tx) { err = v.e.Abort(tx, 0, []byte(key), tok, []byte(msg)) })
	return err
}

func (v *env) extend(key string, tok uint64, lease int64) error {
	v.t.Helper()
	var err error
	v.update(func(tx store.Tx) { err = v.e.Extend(tx, 0, []byte(key), tok, lease) })
	return err
}

func (v *env) wait(key string) once.Result {
	v.t.Helper()
	var (
		r   once.Result
		w   *once.Waiter
		err error
	)
	v.update(func(tx store.Tx) { r, w, err = v.e.Wait(tx, 0, []byte(key), false) })
	if err != nil || w != nil {
		v.t.Fatalf("WAIT %s (non-blocking): %+v waiter=%v err=%v", key, r, w != nil, err)
	}
	return r
}

func (v *env) status(key string) (once.Status, bool) {
	v.t.Helper()
	var (
		s   once.Status
		ok  bool
		err error
	)
	v.update(func(tx store.Tx) { s, ok, err = v.e.Status(tx, 0, []byte(key)) })
	if err != nil {
		v.t.Fatalf("STATUS %s: %v", key, err)
	}
	return s, ok
}

// del deletes key as DEL does through the commands' hook: the delete,
// then Touched, in one transaction.
func (v *env) del(key string) bool {
	v.t.Helper()
	var found bool
	v.update(func(tx store.Tx) {
		var err error
		if found, err = tx.Delete(0, []byte(key)); err != nil {
			v.t.Errorf("delete %s: %v", key, err)
		}
		if found && v.e.Active() {
			v.e.Touched(tx, 0, []byte(key))
		}
	})
	return found
}

func (v *env) runningKeys() int {
	var n int
	v.update(func(tx store.Tx) { n = v.e.RunningKeys(tx.Now()) })
	return n
}

// recv waits up to d for w's result and checks its ticket is durable.
func recv(t *testing.T, w *once.Waiter, d time.Duration) once.Result {
	t.Helper()
	select {
	case r := <-w.C():
		if r.Ticket == nil {
			t.Fatalf("waiter got %+v without a ticket", r)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Ticket.Wait(ctx); err != nil {
			t.Fatalf("waiter's ticket: %v", err)
		}
		return r
	case <-time.After(d):
		t.Fatalf("waiter not woken within %v", d)
	}
	return once.Result{}
}

// quiet checks that w gets nothing within d.
func quiet(t *testing.T, w *once.Waiter, d time.Duration, why string) {
	t.Helper()
	select {
	case r := <-w.C():
		t.Fatalf("%s: waiter woken with %+v, want still waiting", why, r)
	case <-time.After(d):
	}
}

func wantState(t *testing.T, what string, r once.Result, state, answer string) {
	t.Helper()
	if r.Err != nil || r.State != state || (answer != "" && string(r.Answer) != answer) {
		t.Fatalf("%s: got state=%q answer=%q err=%v, want %q %q", what, r.State, r.Answer, r.Err, state, answer)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func fp(s string) once.ClaimArgs { return once.ClaimArgs{FP: []byte(s), HasFP: true} }

func lease(ms int64) once.ClaimArgs { return once.ClaimArgs{Lease: ms} }

// TestEngine runs the engine's state machine, one scenario per case, each
// on a fresh store.
func TestEngine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(t *testing.T, v *env)
	}{
		{"claim free, running, complete, done (KV-8)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(5000))
			r, w, err := v.claim("k", once.ClaimArgs{})
			if err != nil || w != nil {
				t.Fatalf("second CLAIM: %+v %v %v", r, w, err)
			}
			wantState(t, "second CLAIM", r, "running", "")
			if r.MsLeft <= 0 || r.MsLeft > 5000 {
				t.Fatalf("second CLAIM: ms left %d, want in (0, 5000]", r.MsLeft)
			}
			st, ok := v.status("k")
			if !ok || st.State != once.Running || st.Token != tok || st.LeaseMs <= 0 || st.KeepMs != -1 {
				t.Fatalf("STATUS running: %+v ok=%v", st, ok)
			}
			if n := v.runningKeys(); n != 1 {
				t.Fatalf("running keys %d, want 1", n)
			}
			if err := v.complete("k", tok, "the answer", -1); err != nil {
				t.Fatalf("COMPLETE: %v", err)
			}
			for range 3 {
				r, w, err := v.claim("k", once.ClaimArgs{Wait: true})
				if err != nil || w != nil {
					t.Fatalf("CLAIM after complete: %+v %v %v", r, w, err)
				}
				wantState(t, "CLAIM after complete", r, "done", "the answer")
			}
			wantState(t, "WAIT after complete", v.wait("k"), "done", "the answer")
			st, ok = v.status("k")
			if !ok || st.State != once.Done || st.Token != tok || st.KeepMs != -1 || st.LeaseMs != -1 || string(st.Answer) != "the answer" {
				t.Fatalf("STATUS done: %+v ok=%v", st, ok)
			}
			if n := v.runningKeys(); n != 0 {
				t.Fatalf("running keys %d after complete, want 0", n)
			}
			if got := v.e.Stats.Replays.Load(); got < 3 {
				t.Fatalf("replays %d, want >= 3", got)
			}
		}},
		{"empty answer is kept", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", once.ClaimArgs{})
			if err := v.complete("k", tok, "", -1); err != nil {
				t.Fatal(err)
			}
			r, _, err := v.claim("k", once.ClaimArgs{})
			if err != nil || r.State != "done" || len(r.Answer) != 0 {
				t.Fatalf("CLAIM: %+v %v, want done with empty answer", r, err)
			}
		}},
		{"keep expires, then runs again (KV-14)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", once.ClaimArgs{})
			if err := v.complete("k", tok, "memo", 600); err != nil {
				t.Fatal(err)
			}
			r, _, _ := v.claim("k", once.ClaimArgs{})
			wantState(t, "CLAIM within keep", r, "done", "memo")
			st, ok := v.status("k")
			if !ok || st.KeepMs <= 0 || st.KeepMs > 600 {
				t.Fatalf("STATUS keep-ms: %+v", st)
			}
			time.Sleep(700 * time.Millisecond)
			if _, ok := v.status("k"); ok {
				t.Fatalf("STATUS after keep: still there")
			}
			wantState(t, "WAIT after keep", v.wait("k"), "free", "")
			tok2 := v.mustClaim("k", once.ClaimArgs{})
			if tok2 <= tok {
				t.Fatalf("token after keep %d, not above %d", tok2, tok)
			}
		}},
		{"keep 0 answers current waiters only", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", once.ClaimArgs{})
			w1 := v.waiter("k", true, once.ClaimArgs{})
			w2 := v.waiter("k", false, once.ClaimArgs{})
			if err := v.complete("k", tok, "flight", 0); err != nil {
				t.Fatal(err)
			}
			wantState(t, "CLAIM waiter", recv(t, w1, time.Second), "done", "flight")
			wantState(t, "WAIT waiter", recv(t, w2, time.Second), "done", "flight")
			if _, ok := v.status("k"); ok {
				t.Fatalf("keep 0: key still there")
			}
			if tok2 := v.mustClaim("k", once.ClaimArgs{}); tok2 <= tok {
				t.Fatalf("token %d not above %d", tok2, tok)
			}
			if w := v.e.Waiting(); w != 0 {
				t.Fatalf("waiting %d, want 0", w)
			}
		}},
		{"complete wakes every waiter (KV-10)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", once.ClaimArgs{})
			var ws []*once.Waiter
			for i := range 10 {
				ws = append(ws, v.waiter("k", i%2 == 0, once.ClaimArgs{}))
			}
			if st, _ := v.status("k"); st.Waiters != 10 {
				t.Fatalf("STATUS waiters %d, want 10", st.Waiters)
			}
			if n := v.e.Waiting(); n != 10 {
				t.Fatalf("Waiting %d, want 10", n)
			}
			for _, w := range ws {
				quiet(t, w, 0, "before COMPLETE")
			}
			if err := v.complete("k", tok, "A", -1); err != nil {
				t.Fatal(err)
			}
			for i, w := range ws {
				wantState(t, "waiter "+string(rune('0'+i)), recv(t, w, time.Second), "done", "A")
			}
			if n := v.e.Waiting(); n != 0 {
				t.Fatalf("Waiting %d after COMPLETE, want 0", n)
			}
			if n := v.e.Stats.Wakeups.Load(); n != 10 {
				t.Fatalf("wakeups %d, want 10", n)
			}
		}},
		{"abort frees and fails waiters (KV-12)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", once.ClaimArgs{})
			w1 := v.waiter("k", true, once.ClaimArgs{})
			w2 := v.waiter("k", false, once.ClaimArgs{})
			if err := v.abort("k", tok, "card declined?"); err != nil {
				t.Fatal(err)
			}
			wantState(t, "CLAIM waiter", recv(t, w1, time.Second), "failed", "card declined?")
			wantState(t, "WAIT waiter", recv(t, w2, time.Second), "failed", "card declined?")
			if _, ok := v.status("k"); ok {
				t.Fatalf("ABORT kept a record")
			}
			wantState(t, "WAIT after abort", v.wait("k"), "free", "")
			if tok2 := v.mustClaim("k", once.ClaimArgs{}); tok2 <= tok {
				t.Fatalf("token %d not above %d", tok2, tok)
			}
			if n := v.e.Stats.Aborts.Load(); n != 1 {
				t.Fatalf("aborts %d", n)
			}
		}},
		{"extend moves the lease", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(1000))
			if err := v.extend("k", tok, 20000); err != nil {
				t.Fatalf("EXTEND: %v", err)
			}
			time.Sleep(150 * time.Millisecond)
			r, _, _ := v.claim("k", once.ClaimArgs{})
			wantState(t, "CLAIM after extend", r, "running", "")
			if r.MsLeft < 18000 || r.MsLeft > 19900 {
				t.Fatalf("ms left %d, want about 19850", r.MsLeft)
			}
			// Shorter is allowed too: the deadline is now + ms.
			if err := v.extend("k", tok, 5000); err != nil {
				t.Fatal(err)
			}
			st, _ := v.status("k")
			if st.LeaseMs > 5000 || st.LeaseMs < 4000 {
				t.Fatalf("lease-ms %d after EXTEND 5000", st.LeaseMs)
			}
			wantErr(t, "EXTEND 0", v.extend("k", tok, 0), once.ErrInvalidLease)
			wantErr(t, "EXTEND -1", v.extend("k", tok, -1), once.ErrInvalidLease)
			wantErr(t, "EXTEND wrong token", v.extend("k", tok+1, 1000), once.ErrStale)
			wantErr(t, "EXTEND free key", v.extend("free", tok, 1000), once.ErrStale)
		}},
		{"extend keeps a waited claim from lapsing", func(t *testing.T, v *env) {
			// Leases are generous: a stalled test process (GC under the
			// race detector) must not lapse them.
			tok := v.mustClaim("k", lease(1000))
			w := v.waiter("k", true, once.ClaimArgs{})
			for range 4 {
				time.Sleep(75 * time.Millisecond)
				if err := v.extend("k", tok, 1000); err != nil {
					t.Fatalf("EXTEND: %v", err)
				}
			}
			quiet(t, w, 50*time.Millisecond, "extended claim")
			if err := v.complete("k", tok, "ok", -1); err != nil {
				t.Fatal(err)
			}
			wantState(t, "waiter", recv(t, w, time.Second), "done", "ok")
		}},
		{"stale tokens change nothing (KV-13)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", once.ClaimArgs{})
			if err := v.complete("k", tok, "first", -1); err != nil {
				t.Fatal(err)
			}
			wantErr(t, "COMPLETE again", v.complete("k", tok, "second", -1), once.ErrStale)
			wantErr(t, "ABORT after complete", v.abort("k", tok, "x"), once.ErrStale)
			wantErr(t, "EXTEND after complete", v.extend("k", tok, 1000), once.ErrStale)
			r, _, _ := v.claim("k", once.ClaimArgs{})
			wantState(t, "CLAIM", r, "done", "first")

			tok = v.mustClaim("a", once.ClaimArgs{})
			if err := v.abort("a", tok, "x"); err != nil {
				t.Fatal(err)
			}
			wantErr(t, "COMPLETE after abort", v.complete("a", tok, "late", -1), once.ErrStale)
			wantErr(t, "ABORT after abort", v.abort("a", tok, "x"), once.ErrStale)
			wantErr(t, "EXTEND after abort", v.extend("a", tok, 1000), once.ErrStale)
			if _, ok := v.status("a"); ok {
				t.Fatalf("stale COMPLETE after ABORT created a record")
			}
			tok2 := v.mustClaim("a", once.ClaimArgs{})
			wantErr(t, "COMPLETE with the old token of a reclaimed key", v.complete("a", tok, "late", -1), once.ErrStale)
			st, _ := v.status("a")
			if st.State != once.Running || st.Token != tok2 {
				t.Fatalf("stale COMPLETE changed the new claim: %+v", st)
			}
			wantErr(t, "COMPLETE with a future token", v.complete("a", tok2+1, "x", -1), once.ErrStale)
			if n := v.e.Stats.StaleRejects.Load(); n != 8 {
				t.Fatalf("stale rejects %d, want 8", n)
			}
		}},
		{"fingerprint mismatch changes nothing (KV-15)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", fp("req-A"))
			before, _ := v.status("k")
			for _, a := range []once.ClaimArgs{fp("req-B"), {FP: []byte("req-B"), HasFP: true, Wait: true}, fp("")} {
				r, w, err := v.claim("k", a)
				if !errors.Is(err, once.ErrMismatch) || w != nil {
					t.Fatalf("CLAIM FINGERPRINT %q: %+v waiter=%v err=%v, want mismatch", a.FP, r, w != nil, err)
				}
			}
			after, _ := v.status("k")
			if after.Token != before.Token || after.State != once.Running || string(after.Fingerprint) != "req-A" || after.Waiters != 0 {
				t.Fatalf("mismatch changed the record: %+v", after)
			}
			// No fingerprint on the claim: not compared.
			r, _, err := v.claim("k", once.ClaimArgs{})
			if err != nil || r.State != "running" {
				t.Fatalf("CLAIM without fingerprint: %+v %v", r, err)
			}
			r, _, err = v.claim("k", fp("req-A"))
			if err != nil || r.State != "running" {
				t.Fatalf("CLAIM same fingerprint: %+v %v", r, err)
			}
			if err := v.complete("k", tok, "receipt", -1); err != nil {
				t.Fatal(err)
			}
			if _, _, err := v.claim("k", fp("req-B")); !errors.Is(err, once.ErrMismatch) {
				t.Fatalf("CLAIM other fingerprint on done: %v", err)
			}
			r, _, _ = v.claim("k", fp("req-A"))
			wantState(t, "CLAIM same fingerprint on done", r, "done", "receipt")
			r, _, _ = v.claim("k", once.ClaimArgs{})
			wantState(t, "CLAIM no fingerprint on done", r, "done", "receipt")
			if n := v.e.Stats.Mismatches.Load(); n != 4 {
				t.Fatalf("mismatches %d, want 4", n)
			}
			// A record without fingerprint is never a mismatch.
			v.mustClaim("nofp", once.ClaimArgs{})
			r, _, err = v.claim("nofp", fp("anything"))
			if err != nil || r.State != "running" {
				t.Fatalf("CLAIM with fingerprint on a record without: %+v %v", r, err)
			}
		}},
		{"lapse hands over to the oldest CLAIM waiter (KV-13)", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(500))
			wa := v.waiter("k", true, lease(700))
			ww := v.waiter("k", false, once.ClaimArgs{})
			wb := v.waiter("k", true, lease(5000))
			ra := recv(t, wa, 2*time.Second)
			wantState(t, "oldest CLAIM waiter at lapse", ra, "claimed", "")
			if ra.Token <= tok {
				t.Fatalf("handover token %d not above %d", ra.Token, tok)
			}
			quiet(t, wb, 0, "younger CLAIM waiter")
			quiet(t, ww, 0, "WAIT waiter through a handover")
			wantErr(t, "old runner's COMPLETE", v.complete("k", tok, "late", -1), once.ErrStale)
			wantErr(t, "old runner's EXTEND", v.extend("k", tok, 1000), once.ErrStale)
			wantErr(t, "old runner's ABORT", v.abort("k", tok, "late"), once.ErrStale)
			st, _ := v.status("k")
			if st.State != once.Running || st.Token != ra.Token || st.LeaseMs > 700 || st.Waiters != 2 {
				t.Fatalf("after handover: %+v (want token %d, lease <= 700 ms, 2 waiters)", st, ra.Token)
			}
			// The new holder dies too: the next CLAIM waiter takes over.
			rb := recv(t, wb, 2*time.Second)
			wantState(t, "second CLAIM waiter", rb, "claimed", "")
			if rb.Token <= ra.Token {
				t.Fatalf("second handover token %d not above %d", rb.Token, ra.Token)
			}
			wantErr(t, "first heir's COMPLETE", v.complete("k", ra.Token, "late", -1), once.ErrStale)
			quiet(t, ww, 0, "WAIT waiter through a second handover")
			if err := v.complete("k", rb.Token, "finally", -1); err != nil {
				t.Fatal(err)
			}
			wantState(t, "WAIT waiter", recv(t, ww, time.Second), "done", "finally")
			if n := v.e.Stats.Handoffs.Load(); n != 2 {
				t.Fatalf("handoffs %d, want 2", n)
			}
			if n := v.e.Stats.LeaseLapses.Load(); n != 2 {
				t.Fatalf("lease lapses %d, want 2", n)
			}
		}},
		{"lapse with only WAIT waiters frees the key", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(500))
			w1 := v.waiter("k", false, once.ClaimArgs{})
			w2 := v.waiter("k", false, once.ClaimArgs{})
			start := time.Now()
			wantState(t, "WAIT waiter 1", recv(t, w1, 2*time.Second), "free", "")
			wantState(t, "WAIT waiter 2", recv(t, w2, time.Second), "free", "")
			if el := time.Since(start); el < 50*time.Millisecond {
				t.Fatalf("woken after %v, before the lease", el)
			}
			if _, ok := v.status("k"); ok {
				t.Fatalf("key not free after lapse")
			}
			wantErr(t, "COMPLETE after lapse", v.complete("k", tok, "late", -1), once.ErrStale)
			if tok2 := v.mustClaim("k", once.ClaimArgs{}); tok2 <= tok {
				t.Fatalf("token %d not above %d", tok2, tok)
			}
		}},
		{"lapse without waiters frees the key", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(80))
			time.Sleep(120 * time.Millisecond)
			if n := v.runningKeys(); n != 0 {
				t.Fatalf("running keys %d after lapse", n)
			}
			wantErr(t, "COMPLETE after lapse", v.complete("k", tok, "late", -1), once.ErrStale)
			tok2 := v.mustClaim("k", once.ClaimArgs{})
			if tok2 <= tok {
				t.Fatalf("token %d not above %d", tok2, tok)
			}
		}},
		{"handover keeps the record's fingerprint or takes the heir's", func(t *testing.T, v *env) {
			v.mustClaim("withfp", once.ClaimArgs{Lease: 500, FP: []byte("A"), HasFP: true})
			w := v.waiter("withfp", true, once.ClaimArgs{Lease: 5000})
			wantState(t, "heir", recv(t, w, 2*time.Second), "claimed", "")
			st, _ := v.status("withfp")
			if !st.HasFP || string(st.Fingerprint) != "A" {
				t.Fatalf("fingerprint after handover: %+v, want A", st)
			}
			v.mustClaim("nofp", lease(500))
			w = v.waiter("nofp", true, once.ClaimArgs{Lease: 5000, FP: []byte("B"), HasFP: true})
			wantState(t, "heir", recv(t, w, 2*time.Second), "claimed", "")
			st, _ = v.status("nofp")
			if !st.HasFP || string(st.Fingerprint) != "B" {
				t.Fatalf("fingerprint after handover: %+v, want B (the heir's)", st)
			}
			if _, _, err := v.claim("nofp", fp("C")); !errors.Is(err, once.ErrMismatch) {
				t.Fatalf("CLAIM C after heir's B: %v, want mismatch", err)
			}
		}},
		{"DEL of a running record is a lapse", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(10000))
			wc := v.waiter("k", true, lease(10000))
			ww := v.waiter("k", false, once.ClaimArgs{})
			if !v.del("k") {
				t.Fatalf("DEL found nothing")
			}
			rc := recv(t, wc, time.Second)
			wantState(t, "CLAIM waiter at DEL", rc, "claimed", "")
			if rc.Token <= tok {
				t.Fatalf("token %d not above %d", rc.Token, tok)
			}
			quiet(t, ww, 0, "WAIT waiter")
			wantErr(t, "old runner's COMPLETE", v.complete("k", tok, "x", -1), once.ErrStale)
			// DEL with only WAIT waiters: free.
			if !v.del("k") {
				t.Fatalf("second DEL found nothing")
			}
			wantState(t, "WAIT waiter at DEL", recv(t, ww, time.Second), "free", "")
			if _, ok := v.status("k"); ok {
				t.Fatalf("key not free")
			}
			wantErr(t, "heir's COMPLETE after DEL", v.complete("k", rc.Token, "x", -1), once.ErrStale)
			// DEL with no waiter at all.
			v.mustClaim("j", once.ClaimArgs{})
			if n := v.runningKeys(); n != 1 {
				t.Fatalf("running keys %d, want 1", n)
			}
			v.del("j")
			if n := v.runningKeys(); n != 0 {
				t.Fatalf("running keys %d after DEL, want 0", n)
			}
		}},
		{"FLUSHDB of a running record is a lapse", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(10000))
			wc := v.waiter("k", true, once.ClaimArgs{})
			v.update(func(tx store.Tx) {
				if err := tx.Flush(0); err != nil {
					t.Errorf("flush: %v", err)
				}
				v.e.Flushed(tx, 0)
			})
			rc := recv(t, wc, time.Second)
			wantState(t, "CLAIM waiter at FLUSHDB", rc, "claimed", "")
			if rc.Token <= tok {
				t.Fatalf("token %d not above %d", rc.Token, tok)
			}
		}},
		{"cancelled waiter is dropped; a claim handed to a gone waiter passes on", func(t *testing.T, v *env) {
			tok := v.mustClaim("k", lease(500))
			dead := v.waiter("k", true, lease(5000))
			live := v.waiter("k", true, lease(5000))
			timedOut := v.waiter("k", false, once.ClaimArgs{})
			if _, ok := v.e.Cancel(timedOut, false); ok {
				t.Fatalf("Cancel of a waiting waiter reported a result")
			}
			if n := v.e.Waiting(); n != 2 {
				t.Fatalf("waiting %d after cancel, want 2", n)
			}
			// The lease lapses: the claim goes to dead, which has not
			// read it; its connection then goes away.
			// (Between the lease deadline and the handover the record
			// reads as free: wait for the heir's record.)
			deadline := time.Now().Add(3 * time.Second)
			for {
				st, ok := v.status("k")
				if ok && st.Token != tok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no handover within 2s: %+v", st)
				}
				time.Sleep(10 * time.Millisecond)
			}
			r, ok := v.e.Cancel(dead, true)
			if !ok || r.State != "claimed" {
				t.Fatalf("Cancel of a handed-over waiter: %+v %v", r, ok)
			}
			rl := recv(t, live, time.Second)
			wantState(t, "live waiter", rl, "claimed", "")
			if rl.Token <= r.Token {
				t.Fatalf("token %d not above %d", rl.Token, r.Token)
			}
			st, _ := v.status("k")
			if st.Token != rl.Token {
				t.Fatalf("record token %d, want the live waiter's %d", st.Token, rl.Token)
			}
			// A gone waiter with nobody after it: the key becomes free.
			if err := v.complete("k", rl.Token, "x", 0); err != nil {
				t.Fatal(err)
			}
			tok = v.mustClaim("k", lease(500))
			lone := v.waiter("k", true, lease(5000))
			deadline = time.Now().Add(3 * time.Second)
			for {
				st, ok := v.status("k")
				if ok && st.Token != tok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no handover within 2s: %+v", st)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if r, ok := v.e.Cancel(lone, true); !ok || r.State != "claimed" {
				t.Fatalf("Cancel: %+v %v", r, ok)
			}
			if st, ok := v.status("k"); ok {
				t.Fatalf("claim of a gone waiter kept: %+v", st)
			}
			if n := v.e.Waiting(); n != 0 {
				t.Fatalf("waiting %d, want 0", n)
			}
		}},
		{"close wakes waiters with ErrShutdown", func(t *testing.T, v *env) {
			v.mustClaim("k", once.ClaimArgs{})
			w1 := v.waiter("k", true, once.ClaimArgs{})
			w2 := v.waiter("k", false, once.ClaimArgs{})
			v.e.Close()
			for _, w := range []*once.Waiter{w1, w2} {
				r := recv(t, w, time.Second)
				if !errors.Is(r.Err, once.ErrShutdown) {
					t.Fatalf("waiter at close: %+v, want ErrShutdown", r)
				}
			}
		}},
		{"databases are separate", func(t *testing.T, v *env) {
			var r once.Result
			tok := v.mustClaim("k", once.ClaimArgs{})
			v.update(func(tx store.Tx) { r, _, _ = v.e.Claim(tx, 1, []byte("k"), once.ClaimArgs{}) })
			wantState(t, "CLAIM in db 1", r, "claimed", "")
			if r.Token <= tok {
				t.Fatalf("db 1 token %d not above %d", r.Token, tok)
			}
		}},
		{"wrong type", func(t *testing.T, v *env) {
			v.update(func(tx store.Tx) {
				if err := tx.Set(0, []byte("s"), store.Value{Kind: store.KindString, Data: []byte("x")}); err != nil {
					t.Errorf("set: %v", err)
				}
			})
			if _, _, err := v.claim("s", once.ClaimArgs{}); !errors.Is(err, once.ErrWrongType) {
				t.Fatalf("CLAIM on a string: %v", err)
			}
			var err error
			v.update(func(tx store.Tx) { _, _, err = v.e.Wait(tx, 0, []byte("s"), true) })
			if !errors.Is(err, once.ErrWrongType) {
				t.Fatalf("WAIT on a string: %v", err)
			}
			if err := v.complete("s", 1, "x", -1); !errors.Is(err, once.ErrWrongType) {
				t.Fatalf("COMPLETE on a string: %v", err)
			}
			v.update(func(tx store.Tx) { _, _, err = v.e.Status(tx, 0, []byte("s")) })
			if !errors.Is(err, once.ErrWrongType) {
				t.Fatalf("STATUS on a string: %v", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, openEnv(t, "", 30*time.Second))
		})
	}
}

// TestEngineDefaultLease: a claim without LEASE gets the configured one.
func TestEngineDefaultLease(t *testing.T) {
	t.Parallel()
	v := openEnv(t, "", 600*time.Millisecond)
	v.mustClaim("k", once.ClaimArgs{})
	st, _ := v.status("k")
	if st.LeaseMs <= 0 || st.LeaseMs > 600 {
		t.Fatalf("lease-ms %d, want (0, 600]", st.LeaseMs)
	}
	// A heir without LEASE gets the default too.
	w := v.waiter("k", true, once.ClaimArgs{})
	wantState(t, "heir", recv(t, w, 2*time.Second), "claimed", "")
	st, _ = v.status("k")
	if st.LeaseMs <= 0 || st.LeaseMs > 600 {
		t.Fatalf("heir's lease-ms %d, want (0, 600]", st.LeaseMs)
	}
}

// TestEngineTokensSurviveRestart: tokens strictly increase across engine
// restarts on the same store (KV-16), and records survive.
func TestEngineTokensSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var last uint64
	for round := range 4 {
		v := openEnv(t, dir, 30*time.Second)
		// What earlier rounds left is still there.
		if round > 0 {
			st, ok := v.status("done")
			if !ok || st.State != once.Done || string(st.Answer) != "kept" {
				t.Fatalf("round %d: done record: %+v %v", round, st, ok)
			}
			st, ok = v.status("running")
			if !ok || st.State != once.Running || st.LeaseMs <= 0 {
				t.Fatalf("round %d: running record: %+v %v", round, st, ok)
			}
		}
		for i := range 5 {
			key := string(rune('a'+round)) + string(rune('0'+i))
			tok := v.mustClaim(key, once.ClaimArgs{})
			if tok <= last {
				t.Fatalf("round %d: token %d not above %d", round, tok, last)
			}
			last = tok
			if err := v.complete(key, tok, "x", -1); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 {
			tok := v.mustClaim("done", once.ClaimArgs{})
			if err := v.complete("done", tok, "kept", -1); err != nil {
				t.Fatal(err)
			}
			last = max(last, tok)
			last = max(last, v.mustClaim("running", lease(60000)))
		}
		v.close()
	}
}

// TestMapsShrinkAfterABurstOfClaims runs a burst of concurrent claims
// (more than once.ShrinkMin at once, each with a waiter), then completes
// them all: the engine's maps of running claims and of waited keys must
// be rebuilt once they hold a quarter of their peak (a Go map keeps its
// largest buckets otherwise), and go on working: the waiters all get
// their answer, and a claim after the burst runs as before.
func TestMapsShrinkAfterABurstOfClaims(t *testing.T) {
	v := openEnv(t, "", time.Minute)
	n := once.ShrinkMin + once.ShrinkMin/2
	toks := make([]uint64, n)
	ws := make([]*once.Waiter, n)
	for i := range n {
		k := fmt.Sprintf("burst:%d", i)
		toks[i] = v.mustClaim(k, once.ClaimArgs{})
		ws[i] = v.waiter(k, false, once.ClaimArgs{})
	}
	sizes := func() (running, runningPeak, keys, keysPeak, rebuilds int) {
		v.update(func(store.Tx) { running, runningPeak, keys, keysPeak, rebuilds = v.e.MapSizes() })
		return
	}
	if running, runningPeak, keys, keysPeak, rebuilds := sizes(); running != n || runningPeak != n || keys != n || keysPeak != n || rebuilds != 0 {
		t.Fatalf("during the burst: running %d (peak %d), keys %d (peak %d), %d rebuilds; want %d in both, none", running, runningPeak, keys, keysPeak, rebuilds, n)
	}
	for i := range n {
		if err := v.complete(fmt.Sprintf("burst:%d", i), toks[i], fmt.Sprint("answer ", i), 60_000); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range ws {
		wantState(t, "waiter", recv(t, w, 5*time.Second), "done", fmt.Sprint("answer ", i))
	}
	running, runningPeak, keys, keysPeak, rebuilds := sizes()
	if running != 0 || keys != 0 || rebuilds != 2 || runningPeak >= once.ShrinkMin || keysPeak >= once.ShrinkMin {
		t.Fatalf("after the burst: running %d (peak %d), keys %d (peak %d), %d rebuilds; want both maps rebuilt once",
			running, runningPeak, keys, keysPeak, rebuilds)
	}
	tok := v.mustClaim("after", once.ClaimArgs{})
	w := v.waiter("after", false, once.ClaimArgs{})
	if err := v.complete("after", tok, "later", 60_000); err != nil {
		t.Fatal(err)
	}
	wantState(t, "waiter after the burst", recv(t, w, 5*time.Second), "done", "later")
	if r := v.wait("burst:7"); r.State != "done" || string(r.Answer) != "answer 7" {
		t.Fatalf("burst:7 after the rebuild: %+v", r)
	}
}

// TestEngineKeepsNoCallerMemory: the engine builds the keys and records it
// stores in buffers it reuses, and hands waiters the answer without
// copying it at the call, so neither a later save in the same transaction
// nor the caller's reuse of its argument buffers (a connection reads its
// next command into them) may change what was stored or delivered (KV-8,
// KV-12).
func TestEngineKeepsNoCallerMemory(t *testing.T) {
	v := openEnv(t, "", time.Minute)
	toks := map[string]uint64{}
	for _, k := range []string{"a", "bb", "ccc"} {
		toks[k] = v.mustClaim(k, fp("fp-"+k))
	}
	w := v.waiter("bb", false, once.ClaimArgs{})
	answers := map[string]string{"a": "answer-of-a", "bb": "the answer of bb, longer", "ccc": "c"}
	// All three completions in one transaction, as EXEC runs them, each
	// from a buffer scribbled over once the engine returns.
	buf := make([]byte, 0, 64)
	key := make([]byte, 0, 8)
	v.update(func(tx store.Tx) {
		for _, k := range []string{"a", "bb", "ccc"} {
			key = append(key[:0], k...)
			buf = append(buf[:0], answers[k]...)
			if err := v.e.Complete(tx, 0, key, toks[k], buf, 60000); err != nil {
				t.Fatalf("COMPLETE %s: %v", k, err)
			}
			for i := range buf {
				buf[i] = 'X'
			}
			for i := range key {
				key[i] = 'Y'
			}
		}
	})
	wantState(t, "waiter of bb", recv(t, w, 5*time.Second), "done", answers["bb"])
	for k, want := range answers {
		wantState(t, "WAIT "+k, v.wait(k), "done", want)
		if s, ok := v.status(k); !ok || s.State != once.Done || string(s.Answer) != want || string(s.Fingerprint) != "fp-"+k {
			t.Fatalf("STATUS %s: %+v %v, want done with %q and fingerprint fp-%s", k, s, ok, want, k)
		}
	}
	for _, k := range []string{"Y", "YY", "YYY"} {
		if s, ok := v.status(k); ok {
			t.Fatalf("STATUS %s: %+v, want no record under the scribbled key", k, s)
		}
	}
	// And after a restart, from the log and Badger.
	dir := v.dir
	v.close()
	v = openEnv(t, dir, time.Minute)
	for k, want := range answers {
		wantState(t, "WAIT "+k+" after a restart", v.wait(k), "done", want)
	}
}
