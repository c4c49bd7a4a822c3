package badgerdb

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// openGated returns a started store whose log rounds wait at the gate
// (each round takes one value from it) and fail while failing is set.
func openGated(tb testing.TB, fsync Fsync, failing *atomic.Bool) (*DB, chan struct{}) {
	tb.Helper()
	opts := DefaultOptions(tb.TempDir())
	opts.Fsync = fsync
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	gate := make(chan struct{}, 64)
	s.writeHook = func([]op) error {
		<-gate
		if failing.Load() {
			return fmt.Errorf("write log: %w", syscall.ENOSPC)
		}
		return nil
	}
	s.Start()
	tb.Cleanup(func() {
		close(gate)
		s.Close()
	})
	return s, gate
}

// notified records the calls a ticket made.
type notified struct {
	calls atomic.Int64
	got   chan error
}

func newNotified() *notified { return &notified{got: make(chan error, 4)} }

func (n *notified) fn(err error) {
	n.calls.Add(1)
	n.got <- err
}

func (n *notified) await(tb testing.TB) error {
	tb.Helper()
	select {
	case err := <-n.got:
		return err
	case <-time.After(10 * time.Second):
		tb.Fatal("the ticket never made the call it promised")
		return nil
	}
}

// notifyOne stages one write while the log is held at its gate and has
// its ticket promise a call.
func notifyOne(tb testing.TB, s *DB, n *notified) (ticket, store.Notifier) {
	tb.Helper()
	tk, err := trySet(s, 0, "k", "v")
	if err != nil {
		tb.Fatal(err)
	}
	t, ok := tk.(ticket)
	if !ok {
		tb.Fatalf("ticket of a staged write is %T", tk)
	}
	nt, ok := tk.(store.Notifier)
	if !ok {
		tb.Fatal("the store's ticket cannot call back")
	}
	if !nt.Notify(n.fn) {
		tb.Fatal("Notify refused while the write is not durable")
	}
	return t, nt
}

// KV-6: a promised call comes once the write is durable (synced under
// always, in the log under everysec), not before, and only once; a ticket
// already done promises nothing.
func TestNotifyCallsOnceDurable(t *testing.T) {
	for _, fsync := range []Fsync{FsyncAlways, FsyncEverysec} {
		t.Run(fsync.String(), func(t *testing.T) {
			var failing atomic.Bool
			s, gate := openGated(t, fsync, &failing)
			n := newNotified()
			tk, nt := notifyOne(t, s, n)
			select {
			case err := <-n.got:
				t.Fatalf("called (%v) before the log round", err)
			case <-time.After(50 * time.Millisecond):
			}
			gate <- struct{}{}
			if err := n.await(t); err != nil {
				t.Fatalf("call: %v, want nil", err)
			}
			if tk.c.Load() < tk.n {
				t.Fatalf("called with op %d not reached (counter %d)", tk.n, tk.c.Load())
			}
			if fsync == FsyncAlways && tk.c != &s.synced {
				t.Fatal("under always the call must wait for the fsync")
			}
			if nt.Notify(n.fn) {
				t.Fatal("a done ticket promised a call")
			}
			time.Sleep(20 * time.Millisecond)
			if c := n.calls.Load(); c != 1 {
				t.Fatalf("%d calls, want 1", c)
			}
		})
	}
}

// KV-6: a write the log cannot take is never told durable: the call says
// why, as Wait would.
func TestNotifyFailsWhenTheLogFails(t *testing.T) {
	var failing atomic.Bool
	s, gate := openGated(t, FsyncAlways, &failing)
	n := newNotified()
	notifyOne(t, s, n)
	failing.Store(true)
	gate <- struct{}{}
	if err := n.await(t); !errors.Is(err, store.ErrWrite) {
		t.Fatalf("call: %v, want ErrWrite", err)
	}
	// While writes fail, nothing more is promised: the caller waits, and
	// the wait fails at once.
	tk, err := trySet(s, 0, "k2", "v")
	if err == nil {
		if tk.(store.Notifier).Notify(n.fn) {
			t.Fatal("a failing store promised a call")
		}
	}
	failing.Store(false)
	for range 10 {
		gate <- struct{}{}
	}
}

// Close makes every promised call before it returns, and promises none
// after.
func TestCloseMakesThePromisedCalls(t *testing.T) {
	var failing atomic.Bool
	s, gate := openGated(t, FsyncAlways, &failing)
	n := newNotified()
	tk, _ := notifyOne(t, s, n)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	gate <- struct{}{}
	gate <- struct{}{}
	if err := n.await(t); err != nil {
		t.Fatalf("call at Close: %v, want nil (the write was made durable)", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if tk.Notify(n.fn) {
		t.Fatal("a closed store promised a call")
	}
	if s.notices != nil || !s.noticesShut {
		t.Fatal("Close left promised calls")
	}
}
