package badgerdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/oncekv/oncekv/store"
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
	for si := range t.shards {
		sh := &t.shards[si]
		if len(sh.slots)*3/4 < sh.n || sh.n < 0 {
			tb.Fatalf("%s: shard %d holds %d entries in %d slots", step, si, sh.n, len(sh.slots))
		}
		used := 0
		for i, s := range sh.slots {
			if s.h == 0 {
				if s.e != nil {
					tb.Fatalf("%s: empty slot %d of shard %d keeps entry %q", step, i, si, s.e.key)
				}
				continue
			}
			seen++
			used++
			if want[s.e.key] != s.e || s.h != t.hashOf(s.e.key) || t.shardOf(s.h) != sh {
				tb.Fatalf("%s: slot %d of shard %d holds %q, which the table should not hold there", step, i, si, s.e.key)
			}
			for j := s.h & sh.mask; j != uint64(i); j = (j + 1) & sh.mask {
				if sh.slots[j].h == 0 {
					tb.Fatalf("%s: %q at slot %d, unreachable from its home %d past empty slot %d",
						step, s.e.key, i, s.h&sh.mask, j)
				}
			}
		}
		if used != sh.n {
			tb.Fatalf("%s: shard %d counts %d entries, holds %d", step, si, sh.n, used)
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
// them against each other as it goes. Each op is three bytes: the first
// chooses put (half of its values), delete, or a lookup of a missing key
// (and, now and then, a shrink); the other two choose one of n keys.
// With oneShard, the keys are all of the table's first shard, so that
// their runs collide, wrap around and shift back on deletion.
func runTableOps(tb testing.TB, ops []byte, n int, oneShard bool) {
	tb.Helper()
	t := newEntryTable()
	keys := make([]string, 0, n)
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("key:%d", i)
		if !oneShard || t.shardOf(t.hashOf(k)) == &t.shards[0] {
			keys = append(keys, k)
		}
	}
	every := max(3, len(ops)/100/3*3) // about a hundred checks
	want := map[string]*entry{}
	for i := 0; i+3 <= len(ops); i += 3 {
		k := keys[(int(ops[i+1])<<8|int(ops[i+2]))%n]
		step := fmt.Sprintf("op %d (%d on %s)", i/3, ops[i]>>6, k)
		switch ops[i] >> 6 {
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
			if ops[i]&7 == 0 {
				t.shrink()
			}
		}
		if i%every == 0 || i+6 > len(ops) {
			checkTable(tb, &t, want, step)
		}
	}
}

// TestEntryTable puts, replaces and deletes keys in random orders against
// a Go map, checking as it goes that every key is found, no slot is
// stranded and the runs stay whole: with few keys in one shard (so that
// runs collide and wrap around its end), with enough to make that shard
// grow and shrink, and with many over all the shards.
func TestEntryTable(t *testing.T) {
	for _, c := range []struct {
		name      string
		keys, ops int
		oneShard  bool
	}{
		{"few keys in one shard", 12, 4000, true},
		{"a shard grows and shrinks", 200, 20000, true},
		{"many keys", 20000, 60000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.keys)))
			ops := make([]byte, 3*c.ops)
			for i := range ops {
				ops[i] = byte(r.Uint32())
			}
			runTableOps(t, ops, c.keys, c.oneShard)
		})
	}
	t.Run("grows, deletes, shrinks", func(t *testing.T) {
		// Many keys put, most deleted, then shrink: every shard grows
		// well past its first size and must come back down.
		tab := newEntryTable()
		want := map[string]*entry{}
		for i := range 50000 {
			k := fmt.Sprintf("key:%d", i)
			e := newEntry([]byte(k))
			tab.put(e)
			want[k] = e
		}
		checkTable(t, &tab, want, "after 50000 puts")
		grown := len(tab.shards[0].slots)
		for i := range 49000 {
			k := fmt.Sprintf("key:%d", i)
			tab.del(k)
			delete(want, k)
		}
		checkTable(t, &tab, want, "after 49000 deletions")
		tab.shrink()
		checkTable(t, &tab, want, "after shrink")
		if got := len(tab.shards[0].slots); got >= grown || got > slotsFor(tab.shards[0].n) {
			t.Fatalf("shard 0 has %d slots after shrink for %d entries (had %d)", got, tab.shards[0].n, grown)
		}
	})
	t.Run("wraps around", func(t *testing.T) {
		// Runs that wrap from a shard's last slots to its first: five
		// keys of shard 0 whose homes are its two last slots and its two
		// first, put and then deleted in random orders; each deletion
		// must move back exactly the keys whose homes allow it.
		probe := newEntryTable()
		sh0 := &probe.shards[0]
		mask := sh0.mask
		homes := []uint64{mask - 1, mask, 0, 1}
		byHome := map[uint64][]string{}
		enough := func() bool {
			for _, h := range homes {
				if len(byHome[h]) < 5 {
					return false
				}
			}
			return true
		}
		for i := 0; !enough(); i++ {
			k := fmt.Sprintf("k%d", i)
			if h := probe.hashOf(k); probe.shardOf(h) == sh0 {
				byHome[h&mask] = append(byHome[h&mask], k)
			}
		}
		r := rand.New(rand.NewPCG(2, 3))
		for trial := range 200 {
			tab := probe // same seed, so the same shards and homes
			tab.n = 0
			for i := range tab.shards {
				tab.shards[i] = tableShard{}
				tab.shards[i].alloc(tableMinSlots)
			}
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
			if len(tab.shards[0].slots) != tableMinSlots {
				t.Fatalf("%s: shard 0 grew to %d slots", step, len(tab.shards[0].slots))
			}
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
	f.Add([]byte{0, 0, 1, 0, 0, 2, 128, 0, 1, 129, 0, 2, 192, 0, 1})
	seed := make([]byte, 8)
	binary.LittleEndian.PutUint64(seed, 0x8081c2c3_40418283)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, ops []byte) {
		runTableOps(t, ops, 10, true)
	})
}

// BenchmarkEntryTableGet looks up random keys among n, in the table and
// in the Go map it replaced (DB.mem): with 100k and 1M keys most lookups
// miss the CPU's caches, which is what a server's lookup pays.
//
//	go test -run X -bench EntryTableGet ./store/badgerdb
func BenchmarkEntryTableGet(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		keys := make([][]byte, n)
		tab := newEntryTable()
		m := make(map[string]*entry)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "key:%012d", i)
			e := newEntry(keys[i])
			tab.put(e)
			m[e.key] = e
		}
		for _, c := range []struct {
			name string
			get  func([]byte) *entry
		}{
			{"table", tab.get},
			{"map", func(k []byte) *entry { return m[string(k)] }},
		} {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				for b.Loop() {
					if c.get(keys[r.IntN(n)]) == nil {
						b.Fatal("a key put is missing")
					}
				}
			})
		}
	}
}

// BenchmarkEntryTableTouch reads a pipeline's worth of random keys' entries
// and values (16 at a time, as redis-benchmark -P 16 sends them), with and
// without touch first: what the overlapped cache misses save (Prefetch).
func BenchmarkEntryTableTouch(b *testing.B) {
	const batch = 16
	for _, n := range []int{100_000, 1_000_000} {
		keys := make([][]byte, n)
		tab := newEntryTable()
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "key:%012d", i)
			e := newEntry(keys[i])
			e.val = fmt.Appendf(nil, "value:%d", i)
			tab.put(e)
		}
		for _, touch := range []bool{false, true} {
			b.Run(fmt.Sprintf("touch=%v/%d", touch, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				var ks [batch][]byte
				var hs [batch]uint64
				var sink uintptr
				for b.Loop() {
					for i := range ks {
						ks[i] = keys[r.IntN(n)]
					}
					if touch {
						for i, k := range ks {
							hs[i] = tab.hashBytes(k)
						}
						sink += tab.touch(hs[:])
					}
					for _, k := range ks {
						e := tab.get(k)
						if e == nil {
							b.Fatal("a key put is missing")
						}
						sink += uintptr(e.val[0])
					}
				}
				if sink == 1 {
					b.Log(sink)
				}
			})
		}
	}
}

// Prefetch reads memory's index while writers add to it (its shards grow
// from their smallest size) and delete from it: under -race, this shows it
// reads only under the lock that guards it (without the lock, it fails
// here), and afterwards every key reads as last written.
func TestPrefetchWhileWriting(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	const nkeys, rounds = 4000, 6
	key := func(i int) []byte { return fmt.Appendf(nil, "pk:%d", i) }
	long := bytes.Repeat([]byte("x"), 100) // longer than Prefetch's buffer
	done := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(p), 7))
			keys := make([][]byte, 40) // more than Prefetch takes at once
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := range keys {
					keys[i] = key(r.IntN(nkeys * 2)) // half of them never set
				}
				keys[3] = long
				s.Prefetch(0, keys)
				s.Prefetch(0, keys[:1])
			}
		}()
	}
	for round := 0; round < rounds; round++ {
		tk, err := s.Update(func(tx store.Tx) error {
			for i := 0; i < nkeys; i++ {
				if round%3 == 2 && i%2 == 0 {
					if _, err := tx.Delete(0, key(i)); err != nil {
						return err
					}
					continue
				}
				if err := tx.Set(0, key(i), str(fmt.Sprint(round), 0)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if tk != nil {
			if err := tk.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	for i := 0; i < nkeys; i++ {
		want, wantOK := fmt.Sprint(rounds-1), true
		if (rounds-1)%3 == 2 && i%2 == 0 {
			wantOK = false
		}
		var got store.Value
		var ok bool
		if _, err := s.View(func(tx store.Tx) (err error) {
			got, ok, err = tx.Get(0, key(i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if ok != wantOK || (ok && string(got.Data) != want) {
			t.Fatalf("%s: %q %v, want %q %v", key(i), got.Data, ok, want, wantOK)
		}
	}
}
