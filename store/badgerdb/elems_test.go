package badgerdb

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/oncekv/oncekv/store"
)

// newObject stores, in one transaction, a value at key in db owning a new
// object with n elements e000… → v000…, and returns the object.
func newObject(tb testing.TB, s *DB, db int, key string, n int, at int64) uint64 {
	tb.Helper()
	var obj uint64
	_, err := s.Update(func(tx store.Tx) error {
		var err error
		if obj, err = tx.NewObj(db, []byte(key)); err != nil {
			return err
		}
		for i := range n {
			if err := tx.SetElem(obj, fmt.Appendf(nil, "e%03d", i), fmt.Appendf(nil, "v%03d", i)); err != nil {
				return err
			}
		}
		return tx.Set(db, []byte(key), store.Value{Kind: store.KindHash, Data: []byte("meta"), Obj: obj, ExpireAt: at})
	})
	if err != nil {
		tb.Fatalf("new object at %s: %v", key, err)
	}
	return obj
}

// elems lists obj's elements, sub=val, from from on.
func elems(tb testing.TB, s *DB, obj uint64, from string) []string {
	tb.Helper()
	var out []string
	_, err := s.View(func(tx store.Tx) error {
		return tx.ScanElems(obj, []byte(from), func(sub, val []byte) (bool, error) {
			out = append(out, string(sub)+"="+string(val))
			return true, nil
		})
	})
	if err != nil {
		tb.Fatalf("scan elements: %v", err)
	}
	return out
}

// collect runs the object collector now, as its ticker would.
func collect(tb testing.TB, s *DB) {
	tb.Helper()
	if !s.collectObjects() {
		tb.Fatal("collector stopped")
	}
}

func TestObjectElements(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	obj := newObject(t, s, 0, "h", 3, 0)
	v, ok, err := viewGet(s, 0, "h")
	if err != nil || !ok || v.Obj != obj || string(v.Data) != "meta" || v.Kind != store.KindHash {
		t.Fatalf("get h = %+v %v %v, want meta owning %d", v, ok, err, obj)
	}
	want := []string{"e000=v000", "e001=v001", "e002=v002"}
	if got := elems(t, s, obj, ""); !slices.Equal(got, want) {
		t.Fatalf("elements %q, want %q", got, want)
	}
	if got := elems(t, s, obj, "e001"); !slices.Equal(got, want[1:]) {
		t.Fatalf("elements from e001 %q, want %q", got, want[1:])
	}
	if err := s.drainForTest(); err != nil { // now read from Badger
		t.Fatal(err)
	}
	_, err = s.Update(func(tx store.Tx) error {
		b, ok, err := tx.Elem(obj, []byte("e001"))
		if err != nil || !ok || string(b) != "v001" {
			t.Errorf("elem e001 = %q %v %v", b, ok, err)
		}
		if ok, err := tx.DeleteElem(obj, []byte("e001")); !ok || err != nil {
			t.Errorf("delete e001 = %v %v", ok, err)
		}
		if ok, err := tx.DeleteElem(obj, []byte("e001")); ok || err != nil {
			t.Errorf("delete e001 again = %v %v", ok, err)
		}
		return tx.SetElem(obj, []byte("e000"), []byte("new"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := elems(t, s, obj, ""), []string{"e000=new", "e002=v002"}; !slices.Equal(got, want) {
		t.Fatalf("elements %q, want %q", got, want)
	}
	if n := s.Len(0); n != 1 {
		t.Fatalf("DBSIZE %d, want 1: elements are not keys", n)
	}
	if got := keys(t, s, 0, ""); !slices.Equal(got, []string{"h"}) {
		t.Fatalf("keys %q", got)
	}
}

// viewGet reads key in db in a View.
func viewGet(s *DB, db int, key string) (v store.Value, ok bool, err error) {
	_, err = s.View(func(tx store.Tx) error {
		v, ok, err = tx.Get(db, []byte(key))
		return err
	})
	return v, ok, err
}

// Len is DBSIZE's count of db, for tests.
func (s *DB) Len(db int) (n int) {
	s.View(func(tx store.Tx) error { n = tx.Len(db); return nil })
	return n
}

// An object lives while a value owns it, wherever the value moves, and
// its elements go once none does: deleted, replaced, expired, flushed.
func TestObjectCollected(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	update := func(fn func(tx store.Tx) error) {
		t.Helper()
		if _, err := s.Update(fn); err != nil {
			t.Fatal(err)
		}
	}
	move := func(fromDB int, from string, toDB int, to string) {
		update(func(tx store.Tx) error {
			v, _, err := tx.Get(fromDB, []byte(from))
			if err != nil {
				return err
			}
			if _, err := tx.Delete(fromDB, []byte(from)); err != nil {
				return err
			}
			return tx.Set(toDB, []byte(to), v)
		})
	}
	alive := func(obj uint64, want bool) {
		t.Helper()
		collect(t, s)
		if got := len(elems(t, s, obj, "")) > 0; got != want {
			t.Fatalf("object %d has elements: %v, want %v", obj, got, want)
		}
	}

	renamed := newObject(t, s, 0, "a", 5, 0)
	move(0, "a", 0, "b") // RENAME
	move(0, "b", 3, "b") // MOVE
	alive(renamed, true)
	update(func(tx store.Tx) error { return tx.(store.DBSwapper).SwapDBs(3, 4) })
	alive(renamed, true)

	// Each is collected once (NewObj marks the collection due) before
	// what removes its value: that removal must mark it due again.
	deleted := newObject(t, s, 0, "del", 2*elemBatch+3, 0) // several batches
	alive(deleted, true)
	update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte("del")); return err })
	alive(deleted, false)

	replaced := newObject(t, s, 0, "rep", 4, 0)
	alive(replaced, true)
	set(t, s, 0, "rep", str("plain", 0))
	alive(replaced, false)

	expired := newObject(t, s, 0, "exp", 4, clock.Load()+10)
	alive(expired, true)
	clock.Add(20)
	s.Sweep(sweepBudget)
	alive(expired, false)

	flushed := newObject(t, s, 1, "f", 4, 0)
	alive(flushed, true)
	update(func(tx store.Tx) error { return tx.Flush(1) })
	alive(flushed, false)

	var unowned uint64 // given to no value
	update(func(tx store.Tx) error {
		var err error
		unowned, err = tx.NewObj(0, []byte("nobody"))
		if err != nil {
			return err
		}
		return tx.SetElem(unowned, []byte("x"), []byte("y"))
	})
	alive(unowned, false)
	alive(renamed, true)
	if v, ok, err := viewGet(s, 4, "b"); err != nil || !ok || v.Obj != renamed {
		t.Fatalf("the renamed, moved, swapped value: %+v %v %v", v, ok, err)
	}
}

// Objects and their counter survive a restart, and a crash's leftovers
// are collected after it (KV-6).
func TestObjectsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncAlways, nil)
	kept := newObject(t, s, 0, "kept", 3, 0)
	gone := newObject(t, s, 0, "gone", 3, 0)
	if _, err := s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte("gone")); return err }); err != nil {
		t.Fatal(err)
	}
	// Closed before the collector ran: gone's elements are left.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, FsyncAlways, nil)
	if got := len(elems(t, s, kept, "")); got != 3 {
		t.Fatalf("kept has %d elements after restart, want 3", got)
	}
	if got := len(elems(t, s, gone, "")); got != 3 {
		t.Fatalf("gone has %d elements before collection, want its 3 left", got)
	}
	collect(t, s)
	if got := len(elems(t, s, gone, "")); got != 0 {
		t.Fatalf("gone has %d elements after collection", got)
	}
	if got := len(elems(t, s, kept, "")); got != 3 {
		t.Fatalf("kept has %d elements after collection, want 3", got)
	}
	if next := newObject(t, s, 0, "next", 1, 0); next <= gone {
		t.Fatalf("object number %d given again after restart (last was %d)", next, gone)
	}
}

// The first object raises the directory's format to formatObjects, so
// that a build that would misread objects refuses the directory; a
// backup of it says version 3, and its restore is format 4 too, objects
// and all.
func TestObjectsRaiseFormat(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, nil)
	marker := func(dir string) int {
		t.Helper()
		_, format, err := checkDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return format
	}
	if f := marker(dir); f != formatPlain {
		t.Fatalf("fresh directory: format %d, want %d", f, formatPlain)
	}
	obj := newObject(t, s, 0, "h", 3, 0)
	if f := marker(dir); f != formatObjects {
		t.Fatalf("after NewObj: format %d, want %d", f, formatObjects)
	}
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte(backupHeaderObjects)) {
		t.Fatalf("backup starts %q, want %q", buf.Bytes()[:16], backupHeaderObjects)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f := marker(dir); f != formatObjects {
		t.Fatalf("after Close: format %d, want %d", f, formatObjects)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(DefaultOptions(restored), &buf); err != nil {
		t.Fatal(err)
	}
	if f := marker(restored); f != formatObjects {
		t.Fatalf("restored: format %d, want %d", f, formatObjects)
	}
	r := open(t, restored, FsyncEverysec, nil)
	if got := len(elems(t, r, obj, "")); got != 3 {
		t.Fatalf("restored object has %d elements, want 3", got)
	}
	collect(t, r)
	if got := len(elems(t, r, obj, "")); got != 3 {
		t.Fatalf("restored object has %d elements after collection, want 3", got)
	}
}

// The collector walks the owner records without the lock and judges each
// object under it: a value that moves meanwhile (RENAME, MOVE) must keep
// its elements, however the walk and the moves interleave.
func TestObjectMovingWhileCollected(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	const n = 50
	obj := newObject(t, s, 0, "k0", n, 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			from, to := fmt.Sprintf("k%d", i), fmt.Sprintf("k%d", i+1)
			_, err := s.Update(func(tx store.Tx) error {
				v, _, err := tx.Get(i%2, []byte(from))
				if err != nil {
					return err
				}
				if _, err := tx.Delete(i%2, []byte(from)); err != nil {
					return err
				}
				return tx.Set((i+1)%2, []byte(to), v)
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		collect(t, s)
	}
	if v, ok, err := viewGet(s, 3000%2, "k3000"); err != nil || !ok || v.Obj != obj {
		t.Fatalf("the moved value: %+v %v %v", v, ok, err)
	}
	if got := len(elems(t, s, obj, "")); got != n {
		t.Fatalf("the moved value's object has %d elements, want %d", got, n)
	}
}

// elemsRev lists obj's elements, sub=val, in descending order from the
// last before before (nil: the last), at most limit of them.
func elemsRev(tb testing.TB, s *DB, obj uint64, before []byte, limit int) []string {
	tb.Helper()
	var out []string
	_, err := s.View(func(tx store.Tx) error {
		return tx.ScanElemsRev(obj, before, func(sub, val []byte) (bool, error) {
			out = append(out, string(sub)+"="+string(val))
			return len(out) < limit, nil
		})
	})
	if err != nil {
		tb.Fatalf("scan elements backwards: %v", err)
	}
	return out
}

// A backward scan sees what a forward one does, reversed, whether the
// elements are in Badger, dirty in the overlay, or deleted in the overlay
// over Badger's copy; it stops at its object's first element and starts
// below its bound, not at the next object's (whose element with an empty
// name is its prefix's end).
func TestScanElemsRev(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	before := newObject(t, s, 0, "a", 5, 0)
	obj := newObject(t, s, 0, "h", 40, 0)
	after := newObject(t, s, 0, "z", 5, 0)
	if before+1 != obj || obj+1 != after {
		t.Fatalf("objects %d %d %d, want consecutive", before, obj, after)
	}
	if _, err := s.Update(func(tx store.Tx) error { return tx.SetElem(after, nil, []byte("empty")) }); err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	for i := range 40 {
		model[fmt.Sprintf("e%03d", i)] = fmt.Sprintf("v%03d", i)
	}
	check := func(stage string) {
		t.Helper()
		var all []string
		for k, v := range model {
			all = append(all, k+"="+v)
		}
		slices.Sort(all)
		slices.Reverse(all)
		if got := elemsRev(t, s, obj, nil, 1000); !slices.Equal(got, all) {
			t.Fatalf("%s: backwards %q, want %q", stage, got, all)
		}
		fwd := elems(t, s, obj, "")
		slices.Reverse(fwd)
		if !slices.Equal(fwd, all) {
			t.Fatalf("%s: forwards reversed %q, want %q", stage, fwd, all)
		}
		for _, b := range []string{"e000", "e001", "e0155", "e020", "e039", "e040", "f", ""} {
			var want []string
			for _, e := range all {
				if e[:strings.IndexByte(e, '=')] < b {
					want = append(want, e)
				}
			}
			if len(want) > 3 {
				want = want[:3]
			}
			if got := elemsRev(t, s, obj, []byte(b), 3); !slices.Equal(got, want) {
				t.Fatalf("%s: backwards before %q: %q, want %q", stage, b, got, want)
			}
		}
	}
	check("dirty")
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	check("in badger")
	_, err := s.Update(func(tx store.Tx) error {
		for i := 0; i < 40; i += 3 {
			k := fmt.Sprintf("e%03d", i)
			if _, err := tx.DeleteElem(obj, []byte(k)); err != nil {
				return err
			}
			delete(model, k)
		}
		for i := 1; i < 40; i += 5 {
			k := fmt.Sprintf("e%03d", i)
			model[k] = "new"
			if err := tx.SetElem(obj, []byte(k), []byte("new")); err != nil {
				return err
			}
		}
		model["e0155"] = "mid"
		return tx.SetElem(obj, []byte("e0155"), []byte("mid"))
	})
	if err != nil {
		t.Fatal(err)
	}
	check("overlay over badger")
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	check("drained again")
}
