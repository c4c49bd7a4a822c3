package badgerdb

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// openGated returns a started store whose log rounds wait at the gate
// (each round takes one value from it) and fail while failing is set.
// Each round that reaches the gate says so on at.
func openGated(tb testing.TB, fsync Fsync, failing *atomic.Bool) (s *DB, gate, at chan struct{}) {
	tb.Helper()
	gate, at = make(chan struct{}, 64), make(chan struct{}, 64)
	s = openHooked(tb, fsync, func([]op) error {
		at <- struct{}{}
		<-gate
		if failing.Load() {
			return fmt.Errorf("write log: %w", syscall.ENOSPC)
		}
		return nil
	}, nil, func() { close(gate) })
	return s, gate, at
}

// openHooked returns a started store with the given write and kick hooks
// (either may be nil); at the test's end, unblock runs before Close, to
// let the hooks go.
func openHooked(tb testing.TB, fsync Fsync, write func([]op) error, kick, unblock func()) *DB {
	tb.Helper()
	opts := DefaultOptions(tb.TempDir())
	opts.Fsync = fsync
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.writeHook, s.kickHook = write, kick
	s.Start()
	tb.Cleanup(func() {
		unblock()
		s.Close()
	})
	return s
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
// its ticket promise a call. It waits for the logger's round to reach the
// gate first: a round under way is what makes Notify promise, where
// otherwise, under everysec, the caller writes the round itself (lead).
func notifyOne(tb testing.TB, s *DB, at chan struct{}, n *notified) (ticket, store.Notifier) {
	tb.Helper()
	tk, err := trySet(s, 0, "k", "v")
	if err != nil {
		tb.Fatal(err)
	}
	select {
	case <-at:
	case <-time.After(10 * time.Second):
		tb.Fatal("the logger's round never reached the gate")
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
			s, gate, at := openGated(t, fsync, &failing)
			n := newNotified()
			tk, nt := notifyOne(t, s, at, n)
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
	s, gate, at := openGated(t, FsyncAlways, &failing)
	n := newNotified()
	notifyOne(t, s, at, n)
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
	s, gate, at := openGated(t, FsyncAlways, &failing)
	n := newNotified()
	tk, _ := notifyOne(t, s, at, n)
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

// openStalled returns a started everysec store whose logger, each time it
// is kicked, waits until release is closed before its round, and whose
// log writes fail while failing is set; a write whose gate is set waits
// at the gate, saying so on at.
func openStalled(tb testing.TB, failing, gated *atomic.Bool) (s *DB, release func(), gate, at chan struct{}) {
	tb.Helper()
	stall := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(stall) }) }
	gate, at = make(chan struct{}), make(chan struct{}, 8)
	s = openHooked(tb, FsyncEverysec, func([]op) error {
		if gated.Load() {
			at <- struct{}{}
			<-gate
		}
		if failing.Load() {
			return fmt.Errorf("write log: %w", syscall.EIO)
		}
		return nil
	}, func() { <-stall }, release)
	return s, release, gate, at
}

// notifier is the store.Notifier of a staged write of key.
func stagedNotifier(tb testing.TB, s *DB, key string) (ticket, store.Notifier) {
	tb.Helper()
	tk, err := trySet(s, 0, key, "v")
	if err != nil {
		tb.Fatal(err)
	}
	t, ok := tk.(ticket)
	if !ok {
		tb.Fatalf("ticket of a staged write is %T", tk)
	}
	return t, tk.(store.Notifier)
}

// KV-6 under everysec: a writer whose round no one is writing writes it
// itself, in Notify, and is told its write is in the log (false: nothing
// promised, nothing to wait for); the logger is not needed. It sends the
// replies other connections handed over for the writes in its round.
func TestWriterWritesItsOwnLogRound(t *testing.T) {
	var failing, gated atomic.Bool
	s, _, gate, at := openStalled(t, &failing, &gated)

	a, nta := stagedNotifier(t, s, "a")
	na := newNotified()
	if nta.Notify(na.fn) {
		t.Fatal("Notify promised a call while no round was under way: the writer should write it")
	}
	if s.logged.Load() < a.n {
		t.Fatalf("Notify returned with op %d not in the log (logged %d)", a.n, s.logged.Load())
	}
	if got := s.Stats().LogWritesLed; got != 1 {
		t.Fatalf("LogWritesLed = %d, want 1", got)
	}

	// A writer (b) holds the round, at the gate; c, staged meanwhile,
	// hands its call over; d, staged after b's round, leads the next
	// round, with c's op in it, and makes c's call before it returns.
	gated.Store(true)
	b, ntb := stagedNotifier(t, s, "b")
	nb := newNotified()
	bDone := make(chan bool)
	go func() { bDone <- ntb.Notify(nb.fn) }()
	<-at
	gated.Store(false)
	c, ntc := stagedNotifier(t, s, "c")
	nc := newNotified()
	if !ntc.Notify(nc.fn) {
		t.Fatal("Notify did not promise a call while another writer's round was under way")
	}
	gate <- struct{}{}
	if <-bDone {
		t.Fatal("the writer that wrote the round was promised a call")
	}
	if s.logged.Load() < b.n || s.logged.Load() >= c.n {
		t.Fatalf("logged %d after b's round, want b's op %d and not c's %d", s.logged.Load(), b.n, c.n)
	}
	if nc.calls.Load() != 0 {
		t.Fatal("c's call was made before c's op was in the log")
	}
	_, ntd := stagedNotifier(t, s, "d")
	if ntd.Notify(newNotified().fn) {
		t.Fatal("Notify promised a call while no round was under way")
	}
	select {
	case err := <-nc.got:
		if err != nil {
			t.Fatalf("c's call: %v, want nil", err)
		}
	default:
		t.Fatal("d's round held c's op, but c's call was not made by the time d's Notify returned")
	}
	if got := s.Stats().LogWritesLed; got != 3 {
		t.Fatalf("LogWritesLed = %d, want 3", got)
	}
}

// KV-6 under everysec: a round its writer fails to write goes back to the
// logger, in order, and the writer is promised the call instead; the
// logger's retry makes the write durable and the call says so.
func TestLedRoundThatFailsGoesToTheLogger(t *testing.T) {
	var failing, gated atomic.Bool
	s, release, _, _ := openStalled(t, &failing, &gated)
	failing.Store(true)
	k, nt := stagedNotifier(t, s, "k")
	n := newNotified()
	if !nt.Notify(n.fn) {
		t.Fatal("Notify promised nothing after its own round failed")
	}
	if s.logged.Load() >= k.n || s.Stats().LogWritesLed != 0 {
		t.Fatalf("a failed round counted as written (logged %d, led %d)", s.logged.Load(), s.Stats().LogWritesLed)
	}
	failing.Store(false)
	release()
	if err := n.await(t); err != nil {
		t.Fatalf("call: %v, want nil once the logger wrote the round", err)
	}
	if s.logged.Load() < k.n {
		t.Fatalf("called with op %d not in the log", k.n)
	}
	var got string
	if _, err := s.View(func(tx store.Tx) error {
		v, ok, err := tx.Get(0, []byte("k"))
		if ok {
			got = string(v.Data)
		}
		return err
	}); err != nil || got != "v" {
		t.Fatalf("k = %q, %v; want v", got, err)
	}
}
