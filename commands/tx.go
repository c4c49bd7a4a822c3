package commands

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

func txCommands() []*Command {
	return []*Command{
		{Name: "multi", Arity: 1, Flags: AtOnce | NoScript | Loading | Stale | Fast | AllowBusy,
			Categories: []string{"fast", "transaction"}, Run: multiCmd},
		{Name: "exec", Arity: 1, Flags: AtOnce | NoScript | Loading | Stale | SkipSlowlog,
			Categories: []string{"slow", "transaction"}, Run: execCmd},
		{Name: "discard", Arity: 1, Flags: AtOnce | NoScript | Loading | Stale | Fast | AllowBusy,
			Categories: []string{"fast", "transaction"}, Run: discardCmd},
		{Name: "watch", Arity: -2, Flags: AtOnce | NoScript | Loading | Stale | Fast | AllowBusy,
			FirstKey: 1, LastKey: -1, Step: 1, Categories: []string{"fast", "transaction"}, Run: watchCmd},
		{Name: "unwatch", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy,
			Categories: []string{"fast", "transaction"}, Run: unwatchCmd},
	}
}

func multiCmd(x *Ctx) {
	if x.InMulti {
		x.Fail(ErrNestedMulti)
		return
	}
	x.InMulti = true
	x.Queue = x.Queue[:0]
	x.Dirty = false
	x.W.OK()
}

func endMulti(x *Ctx) {
	x.InMulti = false
	x.Queue = nil
	x.Dirty = false
	x.Conn.Update(func(i *resp.Info) { i.Multi = -1 })
	x.S.watch.unwatchAll(x.Conn)
}

func discardCmd(x *Ctx) {
	if !x.InMulti {
		x.Fail(ErrDiscardNoMult)
		return
	}
	endMulti(x)
	x.W.OK()
}

func execCmd(x *Ctx) {
	if !x.InMulti {
		x.Fail(ErrExecNoMulti)
		return
	}
	queue := x.Queue
	if x.Dirty {
		endMulti(x)
		x.Fail(ErrExecAbort)
		return
	}
	s := x.S
	// The transaction ends (queue dropped, WATCHes cleared) however EXEC
	// does, a panic in a queued command included.
	defer endMulti(x)
	var after []func(store.Ticket)
	ran := false
	t, err := s.store.Update(func(tx store.Tx) error {
		ran = true
		defer func() { after = s.commit() }()
		runQueue(x, queue, tx, false)
		return nil
	})
	if !ran && errors.Is(err, store.ErrWrite) {
		// The store refuses writes (a full disk). As in Redis 7, a
		// transaction with a write is discarded, and one of reads runs:
		// reads keep working.
		if queueWrites(s, queue) {
			x.W.Error("EXECABORT Transaction discarded because of: " + errorText(err))
			return
		}
		t, err = s.store.View(func(tx store.Tx) error {
			ran = true
			runQueue(x, queue, tx, true)
			return nil
		})
	}
	runAfter(after, t)
	if err != nil && t == nil {
		x.Fail(err)
		return
	}
	x.Await(t)
}

// runQueue runs EXEC's queued commands in tx, an exclusive transaction or,
// when shared, a shared one (the queue holds no write), unless a watched
// key changed.
func runQueue(x *Ctx, queue [][][]byte, tx store.Tx, shared bool) {
	s := x.S
	if s.watch.dirty(x.Conn, tx.Now()) {
		x.W.NullArray()
		return
	}
	x.InMulti = false
	x.W.Array(len(queue))
	for _, args := range queue {
		cmd, errText := s.resolve(nil, args)
		if cmd == nil {
			x.W.Error(errText)
			continue
		}
		sub := &Ctx{Conn: x.Conn, S: s, Cmd: cmd, Args: args, W: x.W, InExec: true, execTx: tx, execShared: shared}
		switch {
		case cmd.Flags&(Write|ReadOnly) == 0:
		case shared:
			sub.Tx = tx // reads only: nothing for the hooks to see
		default:
			sub.Tx = s.wrap(tx)
		}
		s.beforeRun(x.Conn, cmd)
		sub.start = s.mono()
		errs := x.W.Errors()
		cmd.Run(sub)
		s.account(sub, errs)
		if s.monitors.n.Load() != 0 && monitored(cmd) {
			s.feedMonitors(x.Conn, cmd, args)
		}
	}
}

// queueWrites reports whether a queued command writes.
func queueWrites(s *Server, queue [][][]byte) bool {
	for _, args := range queue {
		if cmd, _ := s.resolve(nil, args); cmd != nil && cmd.Flags&Write != 0 {
			return true
		}
	}
	return false
}

func watchCmd(x *Ctx) {
	if x.InMulti {
		x.Fail(ErrWatchInMulti)
		return
	}
	// Register under the shared lock, so no write is half done.
	_, _ = x.S.store.View(func(tx store.Tx) error {
		for _, k := range x.Args[1:] {
			v, ok, _ := tx.Get(x.DB, k)
			var deadline int64
			if ok {
				deadline = v.ExpireAt
			}
			x.S.watch.add(x.Conn, watchKey{db: x.DB, key: string(k)}, deadline)
		}
		return nil
	})
	x.W.OK()
}

func unwatchCmd(x *Ctx) {
	x.S.watch.unwatchAll(x.Conn)
	x.W.OK()
}

type watchKey struct {
	db  int
	key string
}

type watchState struct {
	keys []watchKey
	// deadlines of the watched keys that had one: a key that expires
	// before EXEC counts as changed (Redis 7).
	deadlines []int64
	dirty     atomic.Bool
}

// watchRegistry marks the transactions of clients whose watched keys a
// write touches.
type watchRegistry struct {
	mu   sync.Mutex
	n    atomic.Int64
	keys map[watchKey]map[*resp.Conn]struct{}
}

func stateOf(c *resp.Conn) *watchState {
	ws, _ := c.Watch.(*watchState)
	if ws == nil {
		ws = &watchState{}
		c.Watch = ws
	}
	return ws
}

func (r *watchRegistry) add(c *resp.Conn, k watchKey, deadline int64) {
	ws := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.keys[k]
	if m == nil {
		m = make(map[*resp.Conn]struct{})
		r.keys[k] = m
	}
	if _, ok := m[c]; ok {
		return
	}
	m[c] = struct{}{}
	ws.keys = append(ws.keys, k)
	ws.deadlines = append(ws.deadlines, deadline)
	r.n.Add(1)
}

func (r *watchRegistry) unwatchAll(c *resp.Conn) {
	ws, _ := c.Watch.(*watchState)
	if ws == nil {
		return
	}
	r.mu.Lock()
	for _, k := range ws.keys {
		if m := r.keys[k]; m != nil {
			delete(m, c)
			r.n.Add(-1)
			if len(m) == 0 {
				delete(r.keys, k)
			}
		}
	}
	r.mu.Unlock()
	ws.keys = nil
	ws.deadlines = nil
	ws.dirty.Store(false)
}

// dirty reports whether c's transaction must abort: a watched key was
// written, or expired, since WATCH.
func (r *watchRegistry) dirty(c *resp.Conn, now int64) bool {
	ws, _ := c.Watch.(*watchState)
	if ws == nil {
		return false
	}
	for _, d := range ws.deadlines {
		if d != 0 && d <= now {
			return true
		}
	}
	return ws.dirty.Load()
}

func (r *watchRegistry) touch(k watchKey) {
	r.mu.Lock()
	for c := range r.keys[k] {
		stateOf(c).dirty.Store(true)
	}
	r.mu.Unlock()
}

func (r *watchRegistry) touchDB(db int, exists func(key string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, m := range r.keys {
		if k.db != db || !exists(k.key) {
			continue
		}
		for c := range m {
			stateOf(c).dirty.Store(true)
		}
	}
}

// touchWatched marks the watchers of key, in the command's database, for
// a write that changed nothing in the store (SET of a missing key with a
// deadline already past).
func (x *Ctx) touchWatched(key []byte) {
	if x.S.watch.Active() {
		x.S.watch.Touched(x.Tx, x.DB, key)
	}
}

// The watch registry is a TxHook.
func (r *watchRegistry) Active() bool { return r.n.Load() > 0 }

// Touched marks the watchers of key.
func (r *watchRegistry) Touched(_ store.Tx, db int, key []byte) {
	r.touch(watchKey{db, string(key)})
}

// Flushing marks the watchers of the keys of db that exist.
func (r *watchRegistry) Flushing(tx store.Tx, db int) {
	r.touchDB(db, func(key string) bool {
		_, ok, _ := tx.Get(db, []byte(key))
		return ok
	})
}

// Swapping marks, as Redis 7.0's touchAllWatchedKeysInDb does for both
// databases of a SWAPDB, the watchers of the keys of a or b that exist in
// a or b: a watched key that exists on either side changes.
func (r *watchRegistry) Swapping(tx store.Tx, a, b int) {
	exists := func(key string) bool {
		for _, db := range [2]int{a, b} {
			if _, ok, _ := tx.Get(db, []byte(key)); ok {
				return true
			}
		}
		return false
	}
	r.touchDB(a, exists)
	r.touchDB(b, exists)
}

// Swapped does nothing: Swapping did the work.
func (r *watchRegistry) Swapped(store.Tx, int, int) {}

// Flushed does nothing: Flushing did the work.
func (r *watchRegistry) Flushed(store.Tx, int) {}

// Commit has nothing to deliver.
func (r *watchRegistry) Commit() func(store.Ticket) { return nil }
