package badgerdb

import (
	"context"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// blocked runs fn in a goroutine and reports whether it is still running
// after a moment; the returned channel closes when it ends.
func blocked(fn func()) (bool, chan struct{}) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
		return false, done
	case <-time.After(50 * time.Millisecond):
		return true, done
	}
}

// waitDone fails tb unless done closes within a generous bound.
func waitDone(tb testing.TB, done chan struct{}, what string) {
	tb.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s never ran: the lock was not let go", what)
	}
}

// A Hold keeps the keyspace lock from its first transaction until Release,
// shared from a View and exclusive from an Update, and lets it go by
// itself after holdMax transactions: a connection's pipeline takes the
// lock once, and others wait for at most holdMax of its commands.
func TestHoldKeepsTheLockUntilRelease(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	h := s.Hold()
	read := func(tx store.Tx) error {
		_, _, err := tx.Get(0, []byte("k"))
		return err
	}

	// Shared: other readers go on, a writer waits for the Release.
	if _, err := h.View(read); err != nil {
		t.Fatal(err)
	}
	if still, _ := blocked(func() { get(t, s, 0, "k") }); still {
		t.Fatal("a read waited for a hold's shared lock")
	}
	still, done := blocked(func() { set(t, s, 0, "k", str("1", 0)) })
	if !still {
		t.Fatal("a write ran while a hold kept the shared lock")
	}
	h.Release()
	waitDone(t, done, "a write after the hold's Release")

	// A write through the hold after a read takes the exclusive lock
	// (the shared one let go first, or it would wait for itself), and
	// a read through the hold runs under it and sees the write.
	if _, err := h.View(read); err != nil {
		t.Fatal(err)
	}
	if still, done := blocked(func() {
		tk, err := h.Update(func(tx store.Tx) error { return tx.Set(0, []byte("k"), str("2", 0)) })
		if err != nil {
			t.Error(err)
		}
		if tk != nil {
			if err := tk.Wait(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}); still {
		waitDone(t, done, "a hold's write after its read")
		t.Fatal("a hold's write after its own read waited")
	}
	var seen string
	if _, err := h.View(func(tx store.Tx) error {
		v, _, err := tx.Get(0, []byte("k"))
		seen = string(v.Data)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if seen != "2" {
		t.Fatalf("a read through the hold saw %q after its write of 2", seen)
	}
	still, done = blocked(func() { get(t, s, 0, "k") })
	if !still {
		t.Fatal("a read ran while a hold kept the exclusive lock")
	}
	h.Release()
	waitDone(t, done, "a read after the hold's Release")

	// After holdMax transactions the hold lets the lock go itself.
	for i := range holdMax {
		if _, err := h.Update(func(tx store.Tx) error { return tx.Set(0, []byte("n"), str(string(rune('a'+i)), 0)) }); err != nil {
			t.Fatal(err)
		}
	}
	if still, done := blocked(func() { get(t, s, 0, "n") }); still {
		waitDone(t, done, "a read after holdMax writes through a hold")
		t.Fatalf("the hold kept the lock past %d transactions", holdMax)
	}
	h.Release() // nothing to let go: no effect
	set(t, s, 0, "k", str("3", 0))
}

// A write through a hold is durable by its ticket like any other (KV-6):
// under appendfsync always the ticket waits for the fsync that holds it,
// and the hold does not keep the logger from writing it.
func TestHoldWriteTicketIsDurable(t *testing.T) {
	s := open(t, t.TempDir(), FsyncAlways, nil)
	h := s.Hold()
	var tickets []store.Ticket
	for i := range 4 {
		tk, err := h.Update(func(tx store.Tx) error {
			return tx.Set(0, []byte{'k', byte('0' + i)}, str("v", 0))
		})
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	h.Release()
	for i, tk := range tickets {
		if tk == nil {
			t.Fatalf("write %d through a hold got no ticket", i)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := tk.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if st := s.Stats(); st.Synced < 4 {
		t.Fatalf("4 writes acknowledged, %d synced", st.Synced)
	}
}
