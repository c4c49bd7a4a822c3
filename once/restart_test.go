package once_test

import (
	"fmt"
	"testing"
	"time"
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
