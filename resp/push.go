package resp

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Pushes: what other connections send a client asynchronously (Pub/Sub
// messages).
//
// A connection that takes pushes (Conn.TakePushes, on its first
// SUBSCRIBE) is served by serveDetached from then on, whose serving
// goroutine waits for its client's requests and for pushes at once, as it
// waits for a blocked command's end: pushes reach the client the moment
// they are published, not when it next sends something. Another
// connection's goroutine encodes a push into the connection's outbox
// (Conn.Push) and signals it; the serving goroutine appends the outbox to
// the replies it sends (flush), so that pushes and replies keep their
// order.
//
// The outbox is bounded as Redis bounds a Pub/Sub client's output buffer
// (client-output-buffer-limit pubsub, 32mb 8mb 60 by default): what was
// pushed and not yet written to the socket counts; at the hard limit, or
// over the soft limit for longer than its seconds, the connection is
// closed at once, as Redis closes it, and a publisher never waits for a
// subscriber that does not read.

// OutputLimit is client-output-buffer-limit for one class of clients:
// zero fields mean no limit.
type OutputLimit struct {
	Hard, Soft  int64
	SoftSeconds time.Duration
}

// DefaultPubsubLimit is Redis's default client-output-buffer-limit for
// Pub/Sub clients.
var DefaultPubsubLimit = OutputLimit{Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60 * time.Second}

// DefaultMonitorLimit bounds a monitor's outbox when client-output-buffer-
// limit normal, the class Redis applies to monitors, sets no limit (its
// default): Redis would let a monitor that does not read grow without
// end; here it is closed as a Pub/Sub client would be.
var DefaultMonitorLimit = DefaultPubsubLimit

// outbox is a connection's pushes not yet sent.
type outbox struct {
	mu sync.Mutex
	w  Writer // encodes the pushes; w.buf holds them
	// inflight is what the serving goroutine took and has not written
	// yet; it counts towards the limits as the pushes still queued.
	inflight  int
	softSince time.Time // when the soft limit was first exceeded
	closed    bool
	ready     chan struct{} // a token when a push was added
	// on is set once the connection takes pushes.
	on atomic.Bool
	// monitor is set while the connection is a monitor (SetMonitor):
	// its outbox is bounded by MonitorLimit rather than PubsubLimit.
	monitor atomic.Bool
}

// SetPubsubLimit changes client-output-buffer-limit pubsub, for every
// connection from its next push.
func (s *Server) SetPubsubLimit(l OutputLimit) { s.pubsubLimit.Store(&l) }

// PubsubLimit is client-output-buffer-limit pubsub in force.
func (s *Server) PubsubLimit() OutputLimit {
	if l := s.pubsubLimit.Load(); l != nil {
		return *l
	}
	return DefaultPubsubLimit
}

// SetNormalLimit changes client-output-buffer-limit normal, which bounds
// monitors here (MonitorLimit), from their next push.
func (s *Server) SetNormalLimit(l OutputLimit) { s.normalLimit.Store(&l) }

// MonitorLimit is the limit of a monitor's outbox: client-output-buffer-
// limit normal, the class Redis applies to monitors, or
// DefaultMonitorLimit when that sets neither a hard nor a soft limit.
func (s *Server) MonitorLimit() OutputLimit {
	if l := s.normalLimit.Load(); l != nil && (l.Hard > 0 || l.Soft > 0) {
		return *l
	}
	return DefaultMonitorLimit
}

// SetMonitor makes c a monitor (MONITOR) or not (RESET): a monitor takes
// pushes, bounded by MonitorLimit.
func (c *Conn) SetMonitor(on bool) {
	if on {
		c.TakePushes()
	}
	c.out.monitor.Store(on)
}

// Monitoring reports what SetMonitor set last.
func (c *Conn) Monitoring() bool { return c.out.monitor.Load() }

// TakePushes makes c a connection that receives pushes: from the end of
// the current command, it is served so that Push reaches its client at
// once. It stays so until it closes.
func (c *Conn) TakePushes() {
	if c.out.on.Load() {
		return
	}
	c.out.mu.Lock()
	if c.out.ready == nil {
		c.out.ready = make(chan struct{}, 1)
	}
	c.out.mu.Unlock()
	c.out.on.Store(true)
}

// SetSubscribed marks c as a Pub/Sub client or not: it is exempt from the
// idle timeout, as in Redis.
func (c *Conn) SetSubscribed(on bool) { c.subscribed.Store(on) }

// Subscribed reports what SetSubscribed set last.
func (c *Conn) Subscribed() bool { return c.subscribed.Load() }

// Push encodes a push with fn, from any goroutine but c's own, and has c
// send it after what it sent so far. It reports false when the push was
// dropped: c is closed, or it was just closed because its outbox went
// over client-output-buffer-limit pubsub.
func (c *Conn) Push(fn func(w *Writer)) bool {
	o := &c.out
	o.mu.Lock()
	if o.closed || !o.on.Load() {
		o.mu.Unlock()
		return false
	}
	o.w.Proto = int(c.proto.Load())
	fn(&o.w)
	used := int64(o.w.Len() + o.inflight)
	if c.srv != nil && c.overLimit(used) {
		o.closed = true
		o.w.buf = nil
		o.mu.Unlock()
		c.srv.log.Warn("client scheduled to be closed for overcoming of output buffer limits",
			zap.Int64("id", c.ID), zap.String("addr", c.Addr), zap.Int64("omem", used))
		c.nc.Close()
		return false
	}
	o.mu.Unlock()
	signal(o.ready)
	return true
}

// overLimit applies the limits to used bytes, as Redis's
// checkClientOutputBufferLimits does; c.out.mu is held.
func (c *Conn) overLimit(used int64) bool {
	l := c.srv.PubsubLimit()
	if c.out.monitor.Load() && !c.Subscribed() {
		// Redis's getClientType: a subscribed monitor is a Pub/Sub
		// client.
		l = c.srv.MonitorLimit()
	}
	o := &c.out
	if l.Hard > 0 && used >= l.Hard {
		return true
	}
	if l.Soft <= 0 || used < l.Soft {
		o.softSince = time.Time{}
		return false
	}
	now := time.Now()
	if o.softSince.IsZero() {
		o.softSince = now
		return false
	}
	return now.Sub(o.softSince) > l.SoftSeconds
}

// PushSelf writes a push to c's own replies, on c's goroutine (a message
// a client publishes to itself): the pushes other connections queued
// first are written before it.
func (c *Conn) PushSelf(fn func(w *Writer)) {
	c.WritePush(func(w *Writer) {
		c.takeOutbox()
		fn(w)
	})
}

// SyncPushes writes the pushes other connections queued so far to c.W,
// on c's goroutine, so that the reply written next comes after them. They
// are sent even if the current command's reply is not (WritePush).
func (c *Conn) SyncPushes() { c.WritePush(func(*Writer) { c.takeOutbox() }) }

// takeOutbox appends the queued pushes to c.W; on c's goroutine.
func (c *Conn) takeOutbox() {
	o := &c.out
	if !o.on.Load() {
		return
	}
	o.mu.Lock()
	if n := o.w.Len(); n > 0 {
		c.W.Raw(o.w.buf)
		o.inflight += n
		o.w.Reset()
		if cap(o.w.buf) > 1<<20 {
			o.w.buf = nil
		}
	}
	o.mu.Unlock()
}

// sentOutbox notes that what takeOutbox took was written.
func (c *Conn) sentOutbox() {
	o := &c.out
	if !o.on.Load() {
		return
	}
	o.mu.Lock()
	o.inflight = 0
	o.mu.Unlock()
}

// closeOutbox drops the pushes of a connection that ended.
func (c *Conn) closeOutbox() {
	o := &c.out
	o.mu.Lock()
	o.closed = true
	o.w.buf = nil
	o.mu.Unlock()
}

// pushWhileBlocked sends c's pushes while a command of c blocks (a RESP3
// subscriber in ONCE.WAIT), as Redis sends a blocked client's messages:
// the replies before the command were sent, and its own comes after, so
// a goroutine of its own may write to the socket meanwhile. The function
// it returns stops it, once it sent what it took, before the command's
// reply is sent.
func (s *Server) pushWhileBlocked(c *Conn) (stop func()) {
	ready := c.pushReady()
	if ready == nil {
		return func() {}
	}
	// The replies handed to the store (handoff.go) go first.
	if !s.settleHandoff(c) {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var buf []byte
		for {
			select {
			case <-quit:
				return
			case <-ready:
			}
			o := &c.out
			o.mu.Lock()
			buf = append(buf[:0], o.w.buf...)
			o.inflight += len(buf)
			o.w.Reset()
			o.mu.Unlock()
			if len(buf) == 0 {
				continue
			}
			var n int
			var err error
			if c.sk.Ready() {
				n, err = c.sk.Write(buf)
			} else {
				n, err = c.nc.Write(buf)
			}
			s.stats.Writes.Add(1)
			s.stats.NetOutput.Add(int64(n))
			c.sentOutbox()
			if err != nil {
				c.nc.Close() // the blocked command sees its client gone
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// pushReady is a channel that receives when pushes wait, or nil.
func (c *Conn) pushReady() <-chan struct{} {
	if !c.out.on.Load() {
		return nil
	}
	return c.out.ready
}
