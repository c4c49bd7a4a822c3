// Package metrics serves the Prometheus endpoint that --metrics-addr
// turns on: GET /metrics in Prometheus's text format.
//
// It uses github.com/prometheus/client_golang rather than a hand-written
// exposition: the format (escaping, histograms, content negotiation,
// OpenMetrics) is the library's, kept right by the people who define it,
// and the Go runtime and process collectors come with it.
//
// Nothing is counted here: a collector reads, at each scrape, the
// counters the command layer keeps anyway for INFO (commands.Server:
// per-command calls, errors and latency buckets, clients, keyspace, the
// ONCE counters) and the store's statistics. The hot path pays nothing
// for the endpoint, whether it is on or off.
package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// StoreStats is the part of the store the endpoint reads.
type StoreStats interface {
	Stats() badgerdb.Stats
}

// Server is the metrics endpoint. New starts nothing; Start listens.
type Server struct {
	addr string
	log  *zap.Logger
	reg  *prometheus.Registry

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	done   chan struct{}
	closed bool
}

// New returns the endpoint of cmds and st, to listen on addr (host:port).
func New(addr string, cmds *commands.Server, st StoreStats, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		newCollector(cmds, st),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Server{addr: addr, log: log, reg: reg}
}

// Handler serves the metrics (GET /metrics) and Go's profiles
// (/debug/pprof/), which is how the performance work finds its bottlenecks
// on a running server: the endpoint is meant for loopback or an operator
// network only.
func (m *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            zap.NewStdLog(m.log),
		MaxRequestsInFlight: 4,
		Timeout:             30 * time.Second,
	}))
	return mux
}

// Start listens on the address and serves in the background.
func (m *Server) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("metrics: server closed")
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return fmt.Errorf("metrics-addr: listen on %s: %w", m.addr, err)
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(m.log),
	}
	m.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics endpoint stopped", zap.Error(err))
		}
	}(m.srv, m.done)
	return nil
}

// Addr is the address listened on (nil before Start), with the port the
// system chose for port 0.
func (m *Server) Addr() net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

// Close stops listening and closes the open connections; a scrape in
// flight is cut short.
func (m *Server) Close() error {
	m.mu.Lock()
	m.closed = true
	srv, done := m.srv, m.done
	m.srv = nil
	m.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	return err
}

// collector reads the server's counters at scrape time.
type collector struct {
	cmds *commands.Server
	st   StoreStats

	cmdCalls, cmdRejected, cmdFailed, cmdDuration *prometheus.Desc
	errors                                        *prometheus.Desc
	dbKeys, dbExpiring                            *prometheus.Desc
	slowlog, buildInfo                            *prometheus.Desc
	server                                        []serverMetric
	once                                          []onceMetric
	store                                         []storeMetric
	bounds                                        []float64
}

type serverMetric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(commands.Stats) float64
}

type onceMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	field string // INFO once field
}

type storeMetric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(badgerdb.Stats) float64
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("oncekv_"+name, help, labels, nil)
}

func newCollector(cmds *commands.Server, st StoreStats) *collector {
	c := &collector{
		cmds:        cmds,
		st:          st,
		cmdCalls:    desc("commands_total", "Calls of each command that ran (INFO commandstats calls).", "cmd"),
		cmdRejected: desc("commands_rejected_total", "Calls of each command refused before running: wrong arity, NOAUTH (INFO commandstats rejected_calls).", "cmd"),
		cmdFailed:   desc("commands_failed_total", "Calls of each command that ran and answered an error (INFO commandstats failed_calls).", "cmd"),
		cmdDuration: desc("command_duration_seconds", "Run time of each command, without the wait for durability nor a blocking command's wait.", "cmd"),
		errors:      desc("error_replies_by_code_total", "Error replies sent, by error code (INFO errorstats).", "code"),
		dbKeys:      desc("db_keys", "Keys in each database that holds any (INFO keyspace keys).", "db"),
		dbExpiring:  desc("db_keys_expiring", "Keys with a deadline in each database that holds any (INFO keyspace expires).", "db"),
		slowlog:     desc("slowlog_length", "Entries in the slow log (SLOWLOG LEN)."),
		buildInfo:   desc("build_info", "Always 1; the labels tell the versions.", "version", "redis_version", "go_version"),
		bounds:      commands.LatencyBounds(),
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	sm := func(name, help string, kind prometheus.ValueType, get func(commands.Stats) float64) {
		c.server = append(c.server, serverMetric{desc(name, help), kind, get})
	}
	sm("connected_clients", "Clients connected (INFO connected_clients).", gauge, func(s commands.Stats) float64 { return float64(s.ConnectedClients) })
	sm("blocked_clients", "Clients waiting in a blocking command such as ONCE.WAIT (INFO blocked_clients).", gauge, func(s commands.Stats) float64 { return float64(s.BlockedClients) })
	sm("connections_received_total", "Connections accepted (INFO total_connections_received).", counter, func(s commands.Stats) float64 { return float64(s.ConnectionsReceived) })
	sm("rejected_connections_total", "Connections refused: maxclients, protected mode (INFO rejected_connections).", counter, func(s commands.Stats) float64 { return float64(s.RejectedConnections) })
	sm("commands_processed_total", "Commands run (INFO total_commands_processed).", counter, func(s commands.Stats) float64 { return float64(s.CommandsProcessed) })
	sm("net_input_bytes_total", "Bytes read from clients (INFO total_net_input_bytes).", counter, func(s commands.Stats) float64 { return float64(s.NetInputBytes) })
	sm("net_output_bytes_total", "Bytes written to clients (INFO total_net_output_bytes).", counter, func(s commands.Stats) float64 { return float64(s.NetOutputBytes) })
	sm("keyspace_hits_total", "Key lookups that found the key (INFO keyspace_hits).", counter, func(s commands.Stats) float64 { return float64(s.KeyspaceHits) })
	sm("keyspace_misses_total", "Key lookups that did not (INFO keyspace_misses).", counter, func(s commands.Stats) float64 { return float64(s.KeyspaceMisses) })
	sm("expired_keys_total", "Keys removed because their deadline passed (INFO expired_keys).", counter, func(s commands.Stats) float64 { return float64(s.ExpiredKeys) })
	sm("error_replies_total", "Error replies sent (INFO total_error_replies).", counter, func(s commands.Stats) float64 { return float64(s.ErrorReplies) })

	om := func(field, help string, kind prometheus.ValueType) {
		name := "once_" + field
		if kind == counter {
			name += "_total"
		}
		c.once = append(c.once, onceMetric{desc(name, help+" (INFO once "+field+")."), kind, field})
	}
	om("claims", "ONCE.CLAIM calls that handed out a claim", counter)
	om("completes", "Claims completed with a result", counter)
	om("aborts", "Claims aborted", counter)
	om("replays", "Calls answered with a stored result", counter)
	om("waits", "Calls that waited for a running key", counter)
	om("wakeups", "Waiters woken by a completion, abort or lapse", counter)
	om("lease_lapses", "Claims whose lease ran out", counter)
	om("handoffs", "Claims handed to a waiter after a lapse or abort", counter)
	om("stale_rejects", "Calls refused with STALE (a token that no longer holds the claim)", counter)
	om("mismatches", "Calls refused with MISMATCH (another fingerprint)", counter)
	om("waiting_clients", "Clients waiting for a key now", gauge)
	om("running_keys", "Keys claimed and running now", gauge)

	stm := func(name, help string, kind prometheus.ValueType, get func(badgerdb.Stats) float64) {
		c.store = append(c.store, storeMetric{desc("store_"+name, help), kind, get})
	}
	stm("pending_writes", "Write transactions staged in memory, not yet committed to the storage engine.", gauge,
		func(s badgerdb.Stats) float64 { return float64(s.Pending) })
	stm("committed_writes_total", "Write transactions committed to the storage engine.", counter,
		func(s badgerdb.Stats) float64 { return float64(s.Committed) })
	stm("synced_writes_total", "Write transactions fsynced (appendfsync always and everysec).", counter,
		func(s badgerdb.Stats) float64 { return float64(s.Synced) })
	stm("lsm_size_bytes", "Size of the storage engine's LSM tree on disk.", gauge,
		func(s badgerdb.Stats) float64 { return float64(s.LSMSize) })
	stm("vlog_size_bytes", "Size of the storage engine's value log on disk.", gauge,
		func(s badgerdb.Stats) float64 { return float64(s.VlogSize) })
	stm("expired_keys_swept_total", "Keys the background sweeper deleted because their deadline passed.", counter,
		func(s badgerdb.Stats) float64 { return float64(s.Expired) })
	stm("writes_refused", "1 while writes are refused because the store cannot write (disk full, fsync failing), else 0.", gauge,
		func(s badgerdb.Stats) float64 {
			if s.LastError != nil {
				return 1
			}
			return 0
		})
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cmdCalls, c.cmdRejected, c.cmdFailed, c.cmdDuration,
		c.errors, c.dbKeys, c.dbExpiring, c.slowlog, c.buildInfo} {
		ch <- d
	}
	for _, m := range c.server {
		ch <- m.desc
	}
	for _, m := range c.once {
		ch <- m.desc
	}
	for _, m := range c.store {
		ch <- m.desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	ch <- prometheus.MustNewConstMetric(c.buildInfo, gauge, 1, commands.OncekvVersion, commands.Version, runtime.Version())

	for _, cs := range c.cmds.CommandStats() {
		ch <- prometheus.MustNewConstMetric(c.cmdCalls, counter, float64(cs.Calls), cs.Name)
		ch <- prometheus.MustNewConstMetric(c.cmdRejected, counter, float64(cs.Rejected), cs.Name)
		ch <- prometheus.MustNewConstMetric(c.cmdFailed, counter, float64(cs.Failed), cs.Name)
		buckets := make(map[float64]uint64, len(c.bounds))
		var cum uint64
		for i, le := range c.bounds {
			cum += uint64(cs.Buckets[i])
			buckets[le] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.cmdDuration, uint64(cs.Calls), cs.Duration.Seconds(), buckets, cs.Name)
	}
	for _, e := range c.cmds.ErrorStats() {
		ch <- prometheus.MustNewConstMetric(c.errors, counter, float64(e.Count), e.Code)
	}

	st := c.cmds.Snapshot()
	for _, m := range c.server {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(st))
	}
	ch <- prometheus.MustNewConstMetric(c.slowlog, gauge, float64(c.cmds.SlowlogLen()))

	// db0 always has a series, so that an empty server shows 0 keys.
	ks := c.cmds.Keyspace()
	if len(ks) == 0 || ks[0].DB != 0 {
		ks = append([]commands.DBStat{{DB: 0}}, ks...)
	}
	for _, d := range ks {
		db := strconv.Itoa(d.DB)
		ch <- prometheus.MustNewConstMetric(c.dbKeys, gauge, float64(d.Keys), db)
		ch <- prometheus.MustNewConstMetric(c.dbExpiring, gauge, float64(d.Expires), db)
	}

	if once := c.cmds.OnceStats(); once != nil {
		for _, m := range c.once {
			if v, ok := once[m.field]; ok {
				ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(v))
			}
		}
	}

	if c.st != nil {
		ss := c.st.Stats()
		for _, m := range c.store {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(ss))
		}
	}
}
