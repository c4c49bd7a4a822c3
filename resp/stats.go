package resp

import (
	"io"
	"sync/atomic"
)

// WireStats are the wire's counters for INFO stats and clients, and for
// the metrics endpoint. Each is updated once per read or write system call
// (not per command), or when a blocked command starts or ends.
type WireStats struct {
	// NetInput and NetOutput are the bytes read from and written to
	// clients (Redis's total_net_input_bytes, total_net_output_bytes).
	NetInput  atomic.Int64
	NetOutput atomic.Int64
	// Reads and Writes count the read and write calls on client sockets
	// (total_reads_processed, total_writes_processed).
	Reads  atomic.Int64
	Writes atomic.Int64
	// Blocked is the number of clients waiting in a blocking command
	// (blocked_clients).
	Blocked atomic.Int64
}

// Stats are the server's wire counters.
func (s *Server) Stats() *WireStats { return &s.stats }

// ErrorObserver is implemented by a Handler that wants to see every error
// reply sent to any client (INFO errorstats, total_error_replies): the
// commands' errors, and the protocol errors the wire answers itself.
type ErrorObserver interface {
	ErrorReplied(msg string)
}

// Replier is implemented by a Handler that keeps per-connection state to
// settle before the connection's replies go out or it waits for more
// requests (Conn.Local): counters a command adds to locally, which every
// client must see once a reply shows that the command ran; a lock that
// must not be held while the connection waits. The server calls
// BeforeReply before it sends replies, before it waits for requests,
// before a blocked command waits, and the handler calls it itself when
// the connection is gone; always on the goroutine that runs the
// connection's commands.
type Replier interface {
	BeforeReply(c *Conn)
}

// Aheader is implemented by a handler that wants to see the keys of a
// pipeline's requests before it runs them. When a read brings complete
// requests of which two or more have a key (a second argument),
// AheadWanted is asked about the first request's name (a pipeline is
// often of one command: a handler that wants nothing from this one is
// spared the reading ahead); if it says yes, Ahead gets the first two
// arguments of each request (names and keys, in turn, in one list; nil
// for a request without a key). Both get views of the connection's read
// buffer: the names and keys keep their bytes until the connection next
// reads, which comes only after the handler's BeforeReply (when it is a
// Replier) or after the connection is done with its requests; the list
// itself is the server's again once Ahead returns.
type Aheader interface {
	AheadWanted(c *Conn, name []byte) bool
	Ahead(c *Conn, namesKeys [][]byte)
}

// countingReader counts what is read from a client's socket.
type countingReader struct {
	r  io.Reader
	st *WireStats
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.st.Reads.Add(1)
	if n > 0 {
		c.st.NetInput.Add(int64(n))
	}
	return n, err
}

// Blocked reports whether the client waits in a blocking command.
func (c *Conn) Blocked() bool { return c.blocked.Load() }
