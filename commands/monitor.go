package commands

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/resp"
)

// MONITOR, as Redis 7.0 has it: every command that ran (not one refused
// for its arity, as unknown, or before it ran) is shown to each monitor
// as a line "+<sec>.<usec> [<db> <addr>] "arg" ...", each argument
// quoted as Redis's sdscatrepr quotes it. Commands flagged skip_monitor
// or admin are not shown; the passwords of AUTH and HELLO's AUTH are
// "(redacted)" as in the slow log. A command is shown after it ran, with the database
// selected then; EXEC after the commands it ran. The lines reach a
// monitor as pushes (resp's Conn.Push), bounded by client-output-buffer-
// limit normal (resp.MonitorLimit).
//
// With no monitor, a command pays one atomic load (monitors.n).

// monitors are the connections in MONITOR mode.
type monitors struct {
	// n is len(list), read without the lock on every command.
	n    atomic.Int32
	mu   sync.Mutex
	list []*resp.Conn
}

func (m *monitors) add(c *resp.Conn) {
	m.mu.Lock()
	m.list = append(m.list, c)
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
}

func (m *monitors) remove(c *resp.Conn) {
	m.mu.Lock()
	for i, mc := range m.list {
		if mc == c {
			m.list = append(m.list[:i], m.list[i+1:]...)
			break
		}
	}
	m.n.Store(int32(len(m.list)))
	m.mu.Unlock()
}

// MONITOR: from its reply on, the connection receives every command.
func monitorCmd(x *Ctx) {
	switch {
	case x.InExec:
		x.Fail(ErrMonitorInMulti)
	case x.Monitoring():
		// Redis ignores a second MONITOR, without a reply.
	default:
		x.SetMonitor(true)
		x.S.monitors.add(x.Conn)
		x.W.OK()
	}
}

// stopMonitor ends c's MONITOR mode (RESET, a disconnect).
func (s *Server) stopMonitor(c *resp.Conn) {
	if c.Monitoring() {
		c.SetMonitor(false)
		s.monitors.remove(c)
	}
}

// monitored reports whether a command's run is shown to monitors: not
// QUIT either, which Redis 7.0 answers before it would show it.
func monitored(cmd *Command) bool { return cmd.Flags&(SkipMonitor|Admin) == 0 && cmd.Name != "quit" }

// monitorRefuses reports whether a monitor may not run cmd: Redis 7.0
// refuses a replica (which a monitor is to it) the commands that read or
// write keys, or may replicate.
func monitorRefuses(c *resp.Conn, cmd *Command) bool {
	return c.Monitoring() && (cmd.Flags&(Write|ReadOnly) != 0 || cmd.Name == "publish" || cmd.Name == "spublish")
}

// feedMonitors shows a command c ran to every monitor; the caller checked
// s.monitors.n.
func (s *Server) feedMonitors(c *resp.Conn, cmd *Command, args [][]byte) {
	s.feedMonitorsAs(c, monitorAddr(c), c.DB, args, redacted(cmd.Name, args))
}

// FeedMonitorsFromScript shows a command a script ran, with Redis's
// address "lua", to every monitor.
func (s *Server) FeedMonitorsFromScript(db int, args [][]byte) {
	if s.monitors.n.Load() != 0 {
		s.feedMonitorsAs(nil, "lua", db, args, nil)
	}
}

func (s *Server) feedMonitorsAs(self *resp.Conn, addr string, db int, args [][]byte, redact map[int]bool) {
	line := monitorLine(s.cfg.Clock(), db, addr, args, redact)
	s.monitors.mu.Lock()
	list := append([]*resp.Conn(nil), s.monitors.list...)
	s.monitors.mu.Unlock()
	for _, m := range list {
		if m == self {
			// Its own command: after its reply, on its own goroutine.
			m.PushSelf(func(w *resp.Writer) { w.Raw(line) })
			continue
		}
		m.Push(func(w *resp.Writer) { w.Raw(line) })
	}
}

// monitorAddr is how a monitor line names c: ip:port, or unix:path.
func monitorAddr(c *resp.Conn) string {
	if strings.HasPrefix(c.LocalAddr, "/") {
		return "unix:" + c.LocalAddr
	}
	return c.Addr
}

// monitorLine formats one line as Redis 7.0's replicationFeedMonitors.
//
// redact are the arguments shown as "(redacted)": the secrets that the
// slow log hides too (slowlog.go's redacted), as Redis 7.0's
// redactClientCommandArgument hides them from both.
func monitorLine(now time.Time, db int, addr string, args [][]byte, redact map[int]bool) []byte {
	us := now.UnixMicro()
	b := make([]byte, 0, 64+len(addr)+8*len(args))
	b = append(b, '+')
	b = strconv.AppendInt(b, us/1e6, 10)
	b = append(b, '.')
	frac := strconv.AppendInt(nil, 1e6+us%1e6, 10)
	b = append(b, frac[1:]...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, ' ')
	b = append(b, addr...)
	b = append(b, ']')
	for i, a := range args {
		b = append(b, ' ')
		if redact[i] {
			a = []byte("(redacted)")
		}
		b = config.AppendQuoted(b, a)
	}
	return append(b, '\r', '\n')
}
