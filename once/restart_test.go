package once_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// TestEngineCountsRunningRecordsOfBeforeTheStart: the running records
// that a restart finds (a runner, or the server, stopped mid-lease; KV-16)
// are counted by RunningKeys (INFO's running_keys) without any command
// touching them, in the background; those deleted or saved again while
// the count goes on are counted as they are now, not as the store held
// them when it opened; and a lease of before lapses to a waiter as any
// lease does (KV-13).
func TestEngineCountsRunningRecordsOfBeforeTheStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// engineFirst starts the engine before the store, as the
		// server does: the store's count finds the records for it.
		// Else the store is started first and walks for the engine.
		engineFirst bool
	}{
		{"engine first", true},
		{"store first", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			v := openEnv(t, dir, time.Minute)
			toks := map[string]uint64{}
			for _, k := range []string{"a", "b", "c", "d", "done", "heir"} {
				toks[k] = v.mustClaim(k, lease(60000))
			}
			if err := v.complete("done", toks["done"], "x", -1); err != nil {
				t.Fatal(err)
			}
			// More than the engine checks in one transaction.
			const many = 300
			for i := range many {
				v.mustClaim(fmt.Sprintf("many:%d", i), lease(60000))
			}
			v.mustClaim("passed", lease(1))
			time.Sleep(20 * time.Millisecond) // passed's lease passes
			if n := v.runningKeys(); n != 5+many {
				t.Fatalf("before the restart: RunningKeys %d, want %d", n, 5+many)
			}
			v.close()

			// While the count may still go on: b deleted, c extended.
			v = startEnv(t, dir, time.Minute, tc.engineFirst, func(v *env) {
				v.del("b")
				if err := v.extend("c", toks["c"], 120000); err != nil {
					t.Fatalf("EXTEND c: %v", err)
				}
			})
			// a, c, d, heir and the many, counted in the background.
			for deadline := time.Now().Add(10 * time.Second); ; {
				n := v.runningKeys()
				if n == 4+many {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the restart: RunningKeys %d for 10 s, want %d (a, c, d, heir and %d)", n, 4+many, many)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if running, _, _, _, _ := v.e.MapSizes(); running != 4+many {
				t.Fatalf("after the restart: %d running records kept, want %d", running, 4+many)
			}
			v.del("d")
			if n := v.runningKeys(); n != 3+many {
				t.Fatalf("after DEL d: RunningKeys %d, want %d", n, 3+many)
			}
			// A lapse of a claim of before the restart (DEL acts as
			// one): heir's claim passes to a CLAIM … WAIT, with a
			// larger token.
			w := v.waiter("heir", true, lease(60000))
			v.del("heir")
			r := recv(t, w, 5*time.Second)
			wantState(t, "heir's waiter", r, "claimed", "")
			if r.Token <= toks["heir"] {
				t.Fatalf("handed-over token %d not above %d", r.Token, toks["heir"])
			}
			if n := v.runningKeys(); n != 3+many {
				t.Fatalf("after the handover: RunningKeys %d, want %d (a, c, heir and %d)", n, 3+many, many)
			}
		})
	}
}

// TestEngineCountsARunningRecordOfBeforeRenamedDuringTheCount: a running
// record of before the restart that another command moves (RENAME) after
// the store's walk found it, and before the engine has checked what the
// walk found, is a running claim still (KV-16), under its new name:
// RunningKeys (INFO's running_keys) counts it once the count ends,
// without any command touching it again. The walk found it under its old
// name, which is gone when the count checks it, and the new name may lie
// where the walk had passed: only the write's hook can tell the engine.
func TestEngineCountsARunningRecordOfBeforeRenamedDuringTheCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		engineFirst bool
		src, dst    string
	}{
		// dst before src in key order: the walk passed it already.
		{"engine first, moved back", true, "m", "a"},
		{"engine first, moved on", true, "m", "z"},
		{"store first, moved back", false, "m", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			v := openEnv(t, dir, time.Minute)
			v.mustClaim(tc.src, lease(60000))
			v.mustClaim("other", lease(60000))
			v.close()

			// The engine's count waits at its first transaction until
			// the RENAME is made: the walk has ended by then.
			renamed := make(chan struct{})
			v = reopenHeldAtCount(t, dir, tc.engineFirst, renamed)
			v.rename(tc.src, tc.dst)
			close(renamed)
			for deadline := time.Now().Add(10 * time.Second); ; {
				n := v.runningKeys()
				if n == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the count: RunningKeys %d for 10 s, want 2 (%s, renamed from %s, and other)", n, tc.dst, tc.src)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// reopenHeldAtCount opens the store and the engine of dir again, the
// engine first or the store first, with the engine's first transaction
// (its count of the running records of before the restart) held until
// release is closed; it returns once the count has reached it, the
// store's walk having ended by then.
func reopenHeldAtCount(t *testing.T, dir string, engineFirst bool, release <-chan struct{}) *env {
	t.Helper()
	st, err := badgerdb.Open(badgerdb.DefaultOptions(dir))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	e := once.New(st, once.Config{DefaultLease: time.Minute})
	counting := make(chan struct{})
	var gate sync.Once
	e.SetUpdater(func(fn func(store.Tx) error) (store.Ticket, error) {
		gate.Do(func() { close(counting); <-release })
		return st.Update(fn)
	})
	if !engineFirst {
		st.Start()
	}
	if err := e.Start(); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	v := &env{t: t, dir: dir, st: st, e: e}
	t.Cleanup(v.close)
	if engineFirst {
		st.Start()
	}
	select {
	case <-counting:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine's count of the running records did not start")
	}
	return v
}

// rename moves src to dst as RENAME does through the commands' hook: the
// hook sees the writes if the engine is Active when the command starts.
func (v *env) rename(src, dst string) {
	v.t.Helper()
	v.update(func(tx store.Tx) {
		hooked := v.e.Active()
		val, ok, err := tx.Get(0, []byte(src))
		if err != nil || !ok {
			v.t.Fatalf("RENAME %s %s: get: %v %v", src, dst, ok, err)
		}
		val.Data = bytes.Clone(val.Data)
		if err := tx.Set(0, []byte(dst), val); err != nil {
			v.t.Fatalf("RENAME: set: %v", err)
		}
		if hooked {
			v.e.Stored(tx, 0, []byte(dst), val)
		}
		if _, err := tx.Delete(0, []byte(src)); err != nil {
			v.t.Fatalf("RENAME: delete: %v", err)
		}
		if hooked {
			v.e.Touched(tx, 0, []byte(src))
		}
	})
}

// TestEngineCountsRunningRecordsOfBeforeSwappedDuringTheCount: a SWAPDB
// made after the store's walk found the running records of before the
// restart, and before the engine has checked them, took them to the other
// database (KV-7): the count looks for them there, and counts them under
// that database (KV-16), so that a DEL there forgets them.
func TestEngineCountsRunningRecordsOfBeforeSwappedDuringTheCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		engineFirst bool
		a, b        int // the databases swapped
		want        int // the database the records are counted in
	}{
		{"engine first", true, 0, 1, 1},
		{"store first", false, 0, 1, 1},
		{"store first, the other way round", false, 3, 0, 3},
		{"other databases", false, 1, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			v := openEnv(t, dir, time.Minute)
			v.mustClaim("a", lease(60000))
			v.mustClaim("b", lease(60000))
			v.close()

			swapped := make(chan struct{})
			v = reopenHeldAtCount(t, dir, tc.engineFirst, swapped)
			v.swap(tc.a, tc.b)
			close(swapped)
			v.waitRunningKeys(2, fmt.Sprintf("after SWAPDB %d %d during the count", tc.a, tc.b))
			v.update(func(tx store.Tx) {
				if _, err := tx.Delete(tc.want, []byte("a")); err != nil {
					t.Fatalf("DEL a in db %d: %v", tc.want, err)
				}
				v.e.Touched(tx, tc.want, []byte("a"))
			})
			v.waitRunningKeys(1, fmt.Sprintf("after DEL a in db %d", tc.want))
		})
	}
}

// swap swaps databases a and b as SWAPDB does through the commands' hook:
// the hook sees the swap if the engine is Active when the command starts.
func (v *env) swap(a, b int) {
	v.t.Helper()
	v.update(func(tx store.Tx) {
		hooked := v.e.Active()
		if err := tx.(store.DBSwapper).SwapDBs(a, b); err != nil {
			v.t.Fatalf("SWAPDB %d %d: %v", a, b, err)
		}
		if hooked {
			v.e.Swapped(tx, a, b)
		}
	})
}

// waitRunningKeys waits up to 10 s for RunningKeys to be n.
func (v *env) waitRunningKeys(n int, what string) {
	v.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		got := v.runningKeys()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("%s: RunningKeys %d for 10 s, want %d", what, got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
