package resp

import (
	"syscall"

	"github.com/oncekv/oncekv/internal/rawio"
)

// Handing the replies to the store.
//
// A pipeline's replies wait for the durability of the writes they
// acknowledge (Conn.Await). Waiting parks the connection's goroutine
// until the store's log round is written (and, under appendfsync always,
// synced), and the round wakes it to send them; then it parks again,
// reading the client's next request. When the replies wait for one store
// ticket that can call back (a notifier), the connection hands them to the
// ticket instead: whoever writes the round that makes them durable (the
// store's loop, or another connection writing the round itself under
// everysec) sends them, with one non-blocking write, the way Redis's event
// loop writes its clients' replies after its AOF, and the connection's
// goroutine goes on reading. It parks once per request instead of twice.
// The ticket may also write the round in this connection's goroutine, when
// none is under way, and then take nothing: the replies are sent here.
//
// The replies handed over are always sent before any later ones: each
// send of the connection first settles the handoff (settleHandoff),
// closing the connection if the writes were not made durable. What the
// non-blocking write leaves is sent at once by a goroutine of its own
// with a blocking write: a client that does not read its replies holds
// back its own connection, never the store's loop.

// notifier is a Waiter that can call back once done (store.Notifier).
type notifier interface {
	Notify(fn func(err error)) bool
}

// handoff is a connection's replies in the store's hands.
type handoff struct {
	c   *Conn
	raw syscall.RawConn // nil: the connection cannot hand off (TLS)
	// notify and write are the method values handed out, made once.
	notify func(error)
	write  func(fd uintptr) bool
	// done receives when the store's loop is through with buf.
	done    chan struct{}
	pending bool
	// buf holds the replies handed over; left what the non-blocking
	// write did not send; err the store's error, werr the write's.
	buf  []byte
	left []byte
	err  error
	werr error
}

// initSocket gives c raw access to its socket, to read requests and send
// replies (package rawio says why) and to hand replies over, when its
// connection has a socket of its own.
func (c *Conn) initSocket() {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	c.sk.Init(raw)
	h := &c.ho
	h.c, h.raw = c, raw
	h.notify = h.durable
	h.write = h.writeFd
	h.done = make(chan struct{}, 1)
}

// handOff hands c's buffered replies to the one ticket they wait for, if
// it can call back; it reports whether it did.
func (s *Server) handOff(c *Conn) bool {
	h := &c.ho
	if h.raw == nil || c.closing || c.W.Len() == 0 || len(c.waits) != 1 {
		return false
	}
	nt, ok := c.waits[0].(notifier)
	if !ok {
		return false
	}
	h.buf, c.W.buf = c.W.buf, h.buf[:0]
	h.left, h.err, h.werr = nil, nil, nil
	h.pending = true
	if !nt.Notify(h.notify) {
		h.pending = false
		h.buf, c.W.buf = c.W.buf, h.buf
		return false
	}
	c.waits[0] = nil
	c.waits = c.waits[:0]
	return true
}

// durable is the ticket's call: it sends the replies if their writes are
// durable, then lets the connection go on. It runs in the store's loop or
// in another connection's goroutine writing a round, so it never blocks.
func (h *handoff) durable(err error) {
	h.err = err
	if err != nil {
		// The connection's goroutine may be parked reading the
		// client, which waits for these replies: wake it to close.
		h.c.nc.Close()
	} else {
		h.left = h.buf
		if werr := h.raw.Write(h.write); werr != nil && h.werr == nil {
			h.werr = werr
		}
		st := &h.c.srv.stats
		st.Writes.Add(1)
		st.NetOutput.Add(int64(len(h.buf) - len(h.left)))
		if len(h.left) > 0 && h.werr == nil {
			// The socket is full. The rest is sent now, not at the
			// connection's next send: the client may wait for all of
			// it before it sends anything more, or be blocked in a
			// command (BLPOP, ONCE.WAIT) while its earlier replies are
			// owed. Not on the store's loop, which a client that does
			// not read must never hold up.
			go h.sendLeft()
			return
		}
	}
	h.done <- struct{}{}
}

// sendLeft sends what the non-blocking write left, waiting for the client
// to read it, then lets the connection go on.
func (h *handoff) sendLeft() {
	n, err := h.c.nc.Write(h.left)
	st := &h.c.srv.stats
	st.Writes.Add(1)
	st.NetOutput.Add(int64(n))
	h.left, h.werr = nil, err
	h.done <- struct{}{}
}

// writeFd writes as much of h.left as the socket takes now; it never asks
// to wait (RawConn.Write would then block the store's loop).
func (h *handoff) writeFd(fd uintptr) bool {
	n, e := rawio.WriteFd(fd, h.left)
	h.left = h.left[n:]
	if e != 0 && e != syscall.EAGAIN {
		h.werr = e
	}
	return true
}

// settleHandoff waits until the replies handed over are sent. It reports
// false when the connection must close: their writes are not durable, or
// the client is gone.
func (s *Server) settleHandoff(c *Conn) bool {
	h := &c.ho
	if !h.pending {
		return true
	}
	<-h.done
	h.pending, h.left = false, nil
	if cap(h.buf) > 1<<20 {
		h.buf = nil // a huge reply's buffer is not kept
	}
	if h.err != nil {
		s.notDurable(c, h.err)
		return false
	}
	if h.werr != nil {
		c.closing = true
		return false
	}
	return true
}

// finishHandoff settles the handoff of a connection that stops being
// served: its store lock let go first (the wait may be long, for a client
// that does not read).
func (s *Server) finishHandoff(c *Conn) {
	if !c.ho.pending {
		return
	}
	if s.beforeReply != nil {
		s.beforeReply(c)
	}
	s.settleHandoff(c)
}
