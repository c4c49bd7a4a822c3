package commands

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// refusingStore refuses every transaction while refuse is set, as the
// Badger store does while its disk is full (store.ErrWrite).
type refusingStore struct {
	*badgerdb.DB
	refuse atomic.Bool
}

var errRefused = fmt.Errorf("%w: no space left on device (injected)", store.ErrWrite)

func (s *refusingStore) Update(fn func(store.Tx) error) (store.Ticket, error) {
	if s.refuse.Load() {
		return nil, errRefused
	}
	return s.DB.Update(fn)
}

// WriteErr tells what Update would answer (store.WriteChecker).
func (s *refusingStore) WriteErr() error {
	if s.refuse.Load() {
		return errRefused
	}
	return s.DB.WriteErr()
}

// A CLAIM … WAIT or ONCE.WAIT whose wait runs out while the store refuses
// writes answers as if it had not waited, in a transaction of its own
// (updateAndDeliver). The store refused that transaction, so nothing ran:
// the reply must be the store's error, as for any write it refuses, not
// an empty ["", nil] pair that no state of the contract has.
func TestOnceWaitTimeoutWhileTheStoreRefuses(t *testing.T) {
	rs := &refusingStore{DB: openTestStore(t)}
	srv := onceServerOver(t, rs)
	runner := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	if r := send(srv, runner, "ONCE.CLAIM", "k", "LEASE", "60000"); !strings.HasPrefix(r, "*2\r\n$7\r\nclaimed\r\n:") {
		t.Fatalf("claim: %q", r)
	}
	for _, args := range [][]string{
		{"ONCE.CLAIM", "k", "WAIT", "50"},
		{"ONCE.WAIT", "k", "TIMEOUT", "50"},
	} {
		rs.refuse.Store(false)
		waiter := &resp.Conn{W: resp.NewWriter(2), Authed: true}
		if r := send(srv, waiter, args...); r != "" {
			t.Fatalf("%q answered at once: %q", args, r)
		}
		fn := waiter.TakeBlock()
		if fn == nil {
			t.Fatalf("%q did not block", args)
		}
		rs.refuse.Store(true)
		fn(make(chan struct{}))
		out := string(waiter.W.Bytes())
		if !strings.HasPrefix(out, "-MISCONF ") {
			t.Errorf("%q, its wait run out while the store refuses writes: %q, want -MISCONF", args, out)
		}
	}
	rs.refuse.Store(false)
}
