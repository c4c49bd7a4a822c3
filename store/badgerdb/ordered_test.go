package badgerdb

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// A scan sees every key that existed when it started while the applier
// moves keys from the overlay to Badger under it (KV-7: SCAN returns every
// key present for the whole iteration). The writer only creates keys, so a
// key missing from a scan is one that left the overlay for a Badger write
// that the scan's iterator did not see.
func TestScanSeesKeysBeingApplied(t *testing.T) {
	s := openDelayed(t, 0, 1<<20) // apply each log round at once
	var created atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i += 50 {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Update(func(tx store.Tx) error {
				for j := i; j < i+50; j++ {
					if err := tx.Set(0, []byte(fmt.Sprintf("k%07d", j)), str("v", 0)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
			created.Store(int64(i + 50))
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(2 * time.Second)
	scans := 0
	for time.Now().Before(deadline) || scans < 20 {
		before := created.Load()
		seen := map[string]bool{}
		for _, k := range keys(t, s, 0, "") {
			seen[k] = true
		}
		for j := int64(0); j < before; j++ {
			if k := fmt.Sprintf("k%07d", j); !seen[k] {
				t.Fatalf("scan %d missed %s, created before it started (%d keys then, %d seen)", scans, k, before, len(seen))
			}
		}
		scans++
	}
}

// The ordered index exists while scans run, follows the writes made
// meanwhile, and is dropped once scans stop, so writes pay for it only
// while someone scans.
func TestOrderedIndexFollowsScans(t *testing.T) {
	s := openDelayed(t, time.Hour, 1<<20) // applied when drained
	orderLen := func() int {
		s.omu.RLock()
		defer s.omu.RUnlock()
		if s.keyOrder == nil {
			return -1
		}
		return s.keyOrder.Len()
	}
	// The sweeper scans the expiry index (always ordered), which does not
	// build the keyspace's index: writes with deadlines would pay for it
	// all the time.
	set(t, s, 0, "ttl", str("v", time.Now().Add(-time.Second).UnixMilli()))
	if n := s.Sweep(time.Second); n != 1 {
		t.Fatalf("the sweeper deleted %d keys, want the expired one", n)
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	if n := orderLen(); n != -1 {
		t.Fatalf("ordered index of %d entries before any scan", n)
	}
	for i := 0; i < 100; i++ {
		set(t, s, 0, fmt.Sprintf("a%03d", i), str("v", 0))
	}
	if got := keys(t, s, 0, ""); len(got) != 100 {
		t.Fatalf("scan found %d keys, want 100", len(got))
	}
	// (A stale kick may have let the applier apply some already.)
	if n, want := orderLen(), dirtyKeys(s); n != want || want == 0 {
		t.Fatalf("after a scan the ordered index holds %d entries, want the %d dirty ones", n, want)
	}
	// Writes while it exists: new keys join it, deletes are entries too.
	set(t, s, 0, "b000", str("v", 0))
	if _, err := s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte("a000")); return err }); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, 0, ""); len(got) != 100 || got[0] != "a001" || got[99] != "b000" {
		t.Fatalf("scan after writes = %d keys, %v…%v; want a001…b000", len(got), got[0], got[len(got)-1])
	}
	// Applied while recently used: kept, and emptied with the overlay.
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	if n := orderLen(); n != 0 {
		t.Fatalf("after the overlay was applied the ordered index holds %d entries (or was dropped: -1)", n)
	}
	// Unused for orderIdle: the next apply drops it.
	s.lastScan.Store(time.Now().Add(-2 * orderIdle).UnixNano())
	set(t, s, 0, "c000", str("v", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	if n := orderLen(); n != -1 {
		t.Fatalf("ordered index of %d entries kept %v after the last scan", n, 2*orderIdle)
	}
	if got := keys(t, s, 0, ""); len(got) != 101 {
		t.Fatalf("scan after the index was rebuilt found %d keys, want 101", len(got))
	}
}

// dirtyKeys counts the keyspace's dirty entries.
func dirtyKeys(s *DB) int {
	s.omu.RLock()
	defer s.omu.RUnlock()
	n := 0
	for _, e := range s.dirty {
		if e.key[0] == spaceKeys {
			n++
		}
	}
	return n
}
