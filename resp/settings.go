package resp

import "time"

// The settings CONFIG SET changes while the server runs. Each applies to
// the connections already open as well as to new ones, as in Redis, except
// where noted.

// SetMaxClients changes maxclients (0: no limit). Connections already
// open are kept; new ones are refused while there are that many.
func (s *Server) SetMaxClients(n int) { s.maxClients.Store(int64(n)) }

// SetProtectedMode changes protected-mode: it applies to new connections.
func (s *Server) SetProtectedMode(on bool) { s.protected.Store(on) }

// SetLimits changes proto-max-bulk-len and client-query-buffer-limit
// (zero fields: Redis's defaults), for new connections and, from their
// next argument, for the open ones.
func (s *Server) SetLimits(l Limits) {
	l = l.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Limits = l
	for c := range s.conns {
		c.rd.SetLimits(l)
	}
}

// SetIdleTimeout changes timeout (0: never). A connection waiting for
// input when it changes gets the new timeout from now.
func (s *Server) SetIdleTimeout(d time.Duration) {
	s.idle.Store(int64(d))
	for _, c := range s.Clients() {
		if !c.idleWait.Load() {
			continue
		}
		c.mu.Lock()
		if c.idleWait.Load() {
			_ = c.nc.SetReadDeadline(idleDeadline(d))
			c.deadline.Store(d > 0)
		}
		c.mu.Unlock()
	}
}

// armIdle sets the read deadline of a connection about to wait for input:
// now plus the idle timeout, or none. SetIdleTimeout re-arms it while it
// waits; disarmIdle ends the wait. With no timeout and no deadline left
// from an earlier one (the usual case), it only marks the wait: no lock,
// no deadline reset on the read path. The wait is marked before the
// timeout is read, and SetIdleTimeout stores the timeout before it looks
// for waits, so one of the two always arms a changed timeout.
func (s *Server) armIdle(c *Conn) {
	c.idleWait.Store(true)
	d := time.Duration(s.idle.Load())
	if d <= 0 && !c.deadline.Load() {
		return
	}
	c.mu.Lock()
	_ = c.nc.SetReadDeadline(idleDeadline(d))
	c.deadline.Store(d > 0)
	c.mu.Unlock()
}

func (s *Server) disarmIdle(c *Conn) { c.idleWait.Store(false) }

func idleDeadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}
