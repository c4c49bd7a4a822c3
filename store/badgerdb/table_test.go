package badgerdb

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkTable checks t against want, the entries it should hold: every
// key of want found, nothing else in its slots, every slot reachable
// from its key's home without an empty slot between, and the count.
func checkTable(tb testing.TB, t *entryTable, want map[string]*entry, step string) {
	tb.Helper()
	if t.len() != len(want) {
		tb.Fatalf("%s: len %d, want %d", step, t.len(), len(want))
	}
	for k, e := range want {
		if got := t.get([]byte(k)); got != e {
			tb.Fatalf("%s: get(%q) = %p, want %p", step, k, got, e)
		}
		if got := t.getString(k); got != e {
			tb.Fatalf("%s: getString(%q) = %p, want %p", step, k, got, e)
		}
	}
	seen := 0
	for i, s := range t.slots {
		if s.h == 0 {
			if s.e != nil {
				tb.Fatalf("%s: empty slot %d keeps entry %q", step, i, s.e.key)
			}
			continue
		}
		seen++
		if want[s.e.key] != s.e || s.h != t.hashOf(s.e.key) {
			tb.Fatalf("%s: slot %d holds %q, which the table should not hold there", step, i, s.e.key)
		}
		for j := s.h & t.mask; j != uint64(i); j = (j + 1) & t.mask {
			if t.slots[j].h == 0 {
				tb.Fatalf("%s: %q at slot %d, unreachable from its home %d past empty slot %d",
					step, s.e.key, i, s.h&t.mask, j)
			}
		}
	}
	if seen != len(want) {
		tb.Fatalf("%s: %d slots in use, want %d", step, seen, len(want))
	}
	n := 0
	for e := range t.all() {
		if want[e.key] != e {
			tb.Fatalf("%s: all yields %q, not held", step, e.key)
		}
		n++
	}
	if n != len(want) {
		tb.Fatalf("%s: all yields %d entries, want %d", step, n, len(want))
	}
}

// runTableOps applies ops to a table and a Go map side by side, checking
// them against each other as it goes: each op is a byte, its low bits
// choosing one of a few keys (so that runs collide and deletions shift
// them) and its top bits put, replace, delete, look up a missing key, or
// shrink.
func runTableOps(tb testing.TB, ops []byte, keys int) {
	tb.Helper()
	t := newEntryTable(0)
	want := map[string]*entry{}
	for i, op := range ops {
		k := fmt.Sprintf("key:%d", int(op)%keys)
		step := fmt.Sprintf("op %d (%d on %s)", i, op>>6, k)
		switch op >> 6 {
		case 0, 1:
			e := newEntry([]byte(k))
			t.put(e)
			want[k] = e
		case 2:
			t.del(k)
			delete(want, k)
			t.del(k) // deleting what is not there changes nothing
		case 3:
			if t.get([]byte("missing:"+k)) != nil {
				tb.Fatalf("%s: found a key never put", step)
			}
			if i%7 == 0 {
				t.shrink()
			}
		}
		if i%16 == 0 || i == len(ops)-1 {
			checkTable(tb, &t, want, step)
		}
	}
}

// TestEntryTable puts, replaces and deletes keys in random orders against
// a Go map, checking after each step that every key is found, no slot is
// stranded and the runs stay whole; with few keys in a small table (so
// that runs collide and wrap around the end) and with many (so that it
// grows and shrinks).
func TestEntryTable(t *testing.T) {
	for _, c := range []struct {
		name      string
		keys, ops int
	}{
		{"few keys", 12, 4000},
		{"grows and shrinks", 5000, 40000},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.keys)))
			ops := make([]byte, c.ops)
			for i := range ops {
				ops[i] = byte(r.Uint32())
			}
			runTableOps(t, ops, c.keys)
		})
	}
	t.Run("wraps around", func(t *testing.T) {
		// Runs that wrap from the table's last slots to its first: five
		// keys whose homes are the two last slots and the two first, put
		// and then deleted in random orders; each deletion must move
		// back exactly the keys whose homes allow it.
		probe := newEntryTable(0)
		byHome := map[uint64][]string{}
		for i := 0; len(byHome) < 4 || len(byHome[probe.mask]) < 5 || len(byHome[0]) < 5 ||
			len(byHome[1]) < 5 || len(byHome[probe.mask-1]) < 5; i++ {
			k := fmt.Sprintf("k%d", i)
			if h := probe.hashOf(k) & probe.mask; h <= 1 || h >= probe.mask-1 {
				byHome[h] = append(byHome[h], k)
			}
		}
		homes := []uint64{probe.mask - 1, probe.mask, 0, 1}
		r := rand.New(rand.NewPCG(2, 3))
		for trial := range 200 {
			tab := probe // same seed, so the same homes
			tab.alloc(tableMinSlots)
			tab.n = 0
			want := map[string]*entry{}
			var order []string
			for len(want) < 5 {
				cands := byHome[homes[r.IntN(len(homes))]]
				k := cands[r.IntN(len(cands))]
				if want[k] == nil {
					e := newEntry([]byte(k))
					tab.put(e)
					want[k] = e
					order = append(order, k)
				}
			}
			step := fmt.Sprintf("trial %d", trial)
			checkTable(t, &tab, want, step+" after puts")
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, k := range order {
				tab.del(k)
				delete(want, k)
				checkTable(t, &tab, want, step+" after deleting "+k)
			}
		}
	})
}

// FuzzEntryTable runs any sequence of operations against a Go map.
func FuzzEntryTable(f *testing.F) {
	f.Add([]byte{0, 1, 2, 128, 129, 0, 192, 130})
	seed := make([]byte, 8)
	binary.LittleEndian.PutUint64(seed, 0x8081c2c3_40418283)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, ops []byte) {
		runTableOps(t, ops, 10)
	})
}
