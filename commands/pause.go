package commands

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/resp"
)

// CLIENT PAUSE, UNPAUSE and UNBLOCK, as Redis 7.0 has them.
//
// A pause holds the commands of every client (ALL), or only those that
// may write (WRITE: the Write commands, and an EXEC whose queue has one),
// until its deadline or CLIENT UNPAUSE. Redis holds a command once it is
// parsed and checked (an unknown command, a wrong arity, NOAUTH and
// MISCONF still answer at once); so does Serve, which makes a held
// command a blocking one (resp.Conn.Block): its connection waits, every
// other connection goes on. Held commands run in the order they were
// held once the pause ends, each through Serve again, so that a pause
// begun meanwhile holds them anew. In ALL mode that includes INFO and the
// CLIENT commands, CLIENT UNPAUSE too, as in Redis: only the deadline
// ends such a pause for its own clients.
//
// While a pause of either mode lasts, nothing writes on its own, as in
// Redis, which neither expires nor evicts keys then: the store's sweeper
// does not delete expired keys (they are hidden from reads all the same,
// KV-4), and the ONCE engine defers a lapse's handover (KV-13) until the
// pause ends.

// pauseMode is CLIENT PAUSE's mode; a later pause never lowers it.
type pauseMode uint8

const (
	pauseOff pauseMode = iota
	pauseWrite
	pauseAll
)

// heldCmd is a command held by a pause.
type heldCmd struct {
	turn chan struct{} // closed when it may run
	done chan struct{} // closed once it ran, or its client left
}

// pauser is the server's pause state.
type pauser struct {
	mu    sync.Mutex
	mode  pauseMode
	until time.Time
	timer *time.Timer
	// ended is closed when the pause ends; nil while there is none.
	ended chan struct{}
	// on is ended != nil, read without mu: every command looks at it,
	// and most servers are never paused, so the mutex's cache line is
	// not moved between cores for each command. A command that reads it
	// just as a pause begins runs, as if it had come before the pause.
	on   atomic.Bool
	held []*heldCmd
	// expiry, if set, pauses and resumes the store's expiry.
	expiry func(paused bool)
}

// expiryPauser is a store whose sweeper can be paused.
type expiryPauser interface {
	PauseExpiry(paused bool)
}

// heldRunGrace bounds how long the release of a pause waits for one held
// command to run before it lets the next one go: a command that waits
// long for the store's lock does not hold back the others for good.
const heldRunGrace = time.Second

// pause starts or extends a pause: the mode only rises, the deadline only
// moves later, as in Redis's pauseClients. A deadline already past ends
// the pause.
func (p *pauser) pause(mode pauseMode, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = max(p.mode, mode)
	if until.After(p.until) {
		p.until = until
	}
	d := time.Until(p.until)
	if d <= 0 {
		p.endLocked()
		return
	}
	if p.ended == nil {
		p.ended = make(chan struct{})
		p.on.Store(true)
		if p.expiry != nil {
			p.expiry(true)
		}
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.expire)
	} else {
		p.timer.Reset(d)
	}
}

// expire is the deadline's timer.
func (p *pauser) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := time.Until(p.until); d > 0 && p.ended != nil {
		p.timer.Reset(d) // extended as the timer fired
		return
	}
	p.endLocked()
}

// unpause is CLIENT UNPAUSE.
func (p *pauser) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

// endLocked ends the pause and lets the held commands run, in order.
func (p *pauser) endLocked() {
	p.mode, p.until = pauseOff, time.Time{}
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.ended == nil {
		return
	}
	close(p.ended)
	p.ended = nil
	p.on.Store(false)
	if p.expiry != nil {
		p.expiry(false)
	}
	held := p.held
	p.held = nil
	if len(held) > 0 {
		go release(held)
	}
}

// release lets held commands run one after another.
func release(held []*heldCmd) {
	for _, h := range held {
		close(h.turn)
		t := time.NewTimer(heldRunGrace)
		select {
		case <-h.done:
		case <-t.C:
		}
		t.Stop()
	}
}

// writesHeld returns a channel closed when the pause ends, or nil if no
// pause holds writes now (either mode does): the ONCE engine's lapse
// waits for it.
func (p *pauser) writesHeld() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended == nil {
		return nil
	}
	return p.ended
}

// hold queues a command if the pause holds it, and returns it (nil: run
// it now). isWrite tells whether the command may write.
func (p *pauser) hold(isWrite func() bool) *heldCmd {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended == nil || p.mode == pauseWrite && !isWrite() {
		return nil
	}
	h := &heldCmd{turn: make(chan struct{}), done: make(chan struct{})}
	p.held = append(p.held, h)
	return h
}

// leave takes a held command whose client left out of the queue.
func (p *pauser) leave(h *heldCmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.held {
		if x == h {
			p.held = append(p.held[:i:i], p.held[i+1:]...)
			return
		}
	}
}

// held makes c's command wait for the end of a pause that holds it, then
// run; it reports whether it was held.
func (s *Server) held(c *resp.Conn, cmd *Command, args [][]byte) bool {
	if !s.pause.on.Load() {
		return false // no pause: the common case, without a lock
	}
	if s.writesRefused(cmd) != nil || c.InMulti && cmd.Flags&AtOnce == 0 && RefusedInMulti(cmd) {
		return false // refused at once, as in Redis
	}
	h := s.pause.hold(func() bool { return s.mayWrite(c, cmd, args) })
	if h == nil {
		return false
	}
	c.Block(func(gone <-chan struct{}) {
		defer close(h.done)
		select {
		case <-h.turn:
		case <-gone:
			s.pause.leave(h)
			return
		}
		select {
		case <-gone:
			return
		default:
		}
		s.Serve(c, args)
	})
	return true
}

// mayWrite reports whether a pause of writes holds cmd: a Write command,
// a script that may write, or an EXEC whose queue has one (Redis's
// is_may_replicate_command).
func (s *Server) mayWrite(c *resp.Conn, cmd *Command, args [][]byte) bool {
	if pausedAsWrite(cmd) || s.scriptMayWrite(cmd, args) {
		return true
	}
	if cmd.Name != "exec" || !c.InMulti {
		return false
	}
	for _, q := range c.Queue {
		if qc, _ := s.resolve(nil, q); qc != nil && (pausedAsWrite(qc) || s.scriptMayWrite(qc, q)) {
			return true
		}
	}
	return false
}

// clientPause is CLIENT PAUSE timeout [WRITE|ALL]: the mode is checked
// before the timeout, as in Redis.
func clientPause(x *Ctx) {
	if len(x.Args) > 4 {
		subcommandSyntax(x)
		return
	}
	mode := pauseAll
	if len(x.Args) == 4 {
		switch {
		case eq(x.Args[3], "write"):
			mode = pauseWrite
		case eq(x.Args[3], "all"):
		default:
			x.W.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := parseInt(x.Args[2])
	if !ok {
		x.W.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		x.W.Error("ERR timeout is negative")
		return
	}
	// As Redis: a timeout of 0 is a deadline at the epoch, and one that
	// overflows the clock wraps into the past; either ends at once.
	until := time.Time{}
	if now := time.Now(); ms > 0 && ms <= math.MaxInt64-now.UnixMilli() {
		until = now.Add(time.Duration(ms) * time.Millisecond)
		if ms > math.MaxInt64/int64(time.Millisecond) {
			until = now.Add(time.Duration(math.MaxInt64))
		}
	}
	x.S.pause.pause(mode, until)
	x.W.OK()
}

func clientUnpause(x *Ctx) {
	x.S.pause.unpause()
	x.W.OK()
}

// clientUnblock is CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: the reason
// is checked before the ID, as in Redis. A client held by CLIENT PAUSE is
// not blocked in a blocking command, and answers 0 (Redis 7.0 crashes on
// it).
func clientUnblock(x *Ctx) {
	if len(x.Args) > 4 {
		subcommandSyntax(x)
		return
	}
	mode := resp.UnblockTimeout
	if len(x.Args) == 4 {
		switch {
		case eq(x.Args[3], "timeout"):
		case eq(x.Args[3], "error"):
			mode = resp.UnblockError
		default:
			x.W.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := parseInt(x.Args[2])
	if !ok {
		x.Fail(ErrNotInteger)
		return
	}
	if x.S.wire != nil && x.S.wire.Unblock(id, mode) {
		x.W.Int(1)
		return
	}
	x.W.Int(0)
}

// pausedAsWrite reports whether CLIENT PAUSE WRITE holds cmd: the write
// commands, and PUBLISH and SPUBLISH, which Redis 7.0 flags may_replicate
// (they go to replicas) and pauses with them.
func pausedAsWrite(cmd *Command) bool {
	return cmd.Flags&Write != 0 || cmd.Name == "publish" || cmd.Name == "spublish"
}
