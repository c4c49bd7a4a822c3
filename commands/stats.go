package commands

import (
	"math/bits"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// The server's observability counters: per command (INFO commandstats,
// the metrics endpoint's latency histograms), per error code (INFO
// errorstats), the instantaneous rates of INFO stats, the memory peak and
// the slow log. The hot path (account, once per command) adds to the
// connection's tally (which goes to the command's atomics once per
// pipeline), reads the clock twice and compares the duration with the
// slow log's threshold; everything else is computed when INFO or a
// scrape asks.

// LatencyBuckets is the number of finite buckets of the per-command
// latency histograms: bucket k counts the calls that took at most 2^k µs
// (1 µs … about 4.2 s); one more bucket counts the slower ones.
const LatencyBuckets = 23

// LatencyBounds are the buckets' upper bounds in seconds.
func LatencyBounds() []float64 {
	out := make([]float64, LatencyBuckets)
	for k := range out {
		out[k] = float64(uint64(1)<<k) * 1e-6
	}
	return out
}

// bucketOf is the latency bucket of a duration.
func bucketOf(d time.Duration) int {
	if d <= time.Microsecond {
		return 0
	}
	us := (uint64(d) + 999) / 1000 // rounded up
	return min(bits.Len64(us-1), LatencyBuckets)
}

// cmdStats are one command's counters. calls is the sum of the buckets.
type cmdStats struct {
	buckets  [LatencyBuckets + 1]atomic.Int64
	nanos    atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
}

func (st *cmdStats) reset() {
	for i := range st.buckets {
		st.buckets[i].Store(0)
	}
	st.nanos.Store(0)
	st.rejected.Store(0)
	st.failed.Store(0)
}

// CommandStat is a snapshot of one command's counters.
type CommandStat struct {
	// Name is the full name, "get" or "config|get".
	Name                    string
	Calls, Rejected, Failed int64
	// Duration is the total run time of the calls.
	Duration time.Duration
	// Buckets counts the calls per latency bucket (not cumulative); the
	// last one counts those slower than every bound of LatencyBounds.
	Buckets [LatencyBuckets + 1]int64
}

// CommandStats returns the counters of every command that was called or
// rejected since the start or CONFIG RESETSTAT, by name.
func (s *Server) CommandStats() []CommandStat {
	var out []CommandStat
	s.eachCommand(func(c *Command) {
		st := c.stats
		if st == nil {
			return
		}
		cs := CommandStat{Name: c.Name, Rejected: st.rejected.Load(), Failed: st.failed.Load(),
			Duration: time.Duration(st.nanos.Load())}
		for i := range st.buckets {
			cs.Buckets[i] = st.buckets[i].Load()
			cs.Calls += cs.Buckets[i]
		}
		if cs.Calls != 0 || cs.Rejected != 0 || cs.Failed != 0 {
			out = append(out, cs)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// eachCommand calls fn for every registered command and subcommand.
func (s *Server) eachCommand(fn func(c *Command)) {
	for _, c := range s.table.All() {
		fn(c)
		for _, sub := range c.Subcommands {
			fn(sub)
		}
	}
}

// mono reads the server's monotonic clock: the time since New. It reads
// the system's clock once (time.Now reads it twice, for the wall and the
// monotonic time), which matters at a million commands a second.
func (s *Server) mono() time.Duration { return time.Since(s.obs.epoch) }

// wallAt is the wall time of a mono reading (with a Clock configured, for
// tests, that clock's time).
func (s *Server) wallAt(m time.Duration) time.Time {
	if s.obs.fakeClock {
		return s.cfg.Clock()
	}
	return s.obs.epoch.Add(m)
}

// account records a command that ran, from x.start to now: its duration,
// whether its run wrote an error reply (the writer's error count went past
// errs), and, past the threshold, a slow log entry. A command on keys
// counts in its connection's tally; others count at once.
func (s *Server) account(x *Ctx, errs int64) {
	x.end = s.mono()
	d := x.end - x.start
	failed := x.W.Errors() > errs
	if t := tallyOf(x.Conn); t != nil && tallied(x.Cmd) && x.Cmd.stats != nil {
		t.add(x.Cmd.stats, d, failed)
	} else {
		s.stats.commands.Add(1)
		if st := x.Cmd.stats; st != nil {
			st.buckets[bucketOf(d)].Add(1)
			st.nanos.Add(int64(d))
			if failed {
				st.failed.Add(1)
			}
		}
	}
	if lim := s.obs.slowerThan.Load(); lim >= 0 && d.Microseconds() >= lim && x.Cmd.Flags&SkipSlowlog == 0 {
		s.obs.slowlog.add(x, s.wallAt(x.start), d, int(s.obs.slowMaxLen.Load()))
	}
}

// A tally is what one connection's commands counted since it last settled
// (BeforeReply): the calls of its latest run of one command on keys, and
// its commands, keyspace hits and misses. Adding to the shared atomics once
// per pipeline rather than several times per command matters when two
// cores run commands: each add moves the counter's cache line from one
// to the other. Everything a tally holds is added before the
// connection's replies go out, before it waits for more requests, before
// any other command runs (INFO, CONFIG RESETSTAT: they see or reset the
// counters) and when it disconnects, so no client sees a reply whose
// command is not counted yet.
type tally struct {
	cmd      *cmdStats // whose calls buckets, nanos and failed count
	buckets  [LatencyBuckets + 1]int64
	touched  uint32 // bit k set: buckets[k] is not 0
	nanos    int64
	failed   int64
	commands int64
	hits     int64
	misses   int64
}

// tallyOf is c's tally, made on first use; nil without a connection.
func tallyOf(c *resp.Conn) *tally {
	if l := localOf(c); l != nil {
		return &l.tally
	}
	return nil
}

// add counts a call of the command whose counters are st.
func (t *tally) add(st *cmdStats, d time.Duration, failed bool) {
	if t.cmd != st {
		t.settleCmd()
		t.cmd = st
	}
	k := bucketOf(d)
	t.buckets[k]++
	t.touched |= 1 << k
	t.nanos += int64(d)
	if failed {
		t.failed++
	}
	t.commands++
}

// settleCmd adds the calls counted to their command's counters.
func (t *tally) settleCmd() {
	st := t.cmd
	if st == nil {
		return
	}
	for m := t.touched; m != 0; m &= m - 1 {
		k := bits.TrailingZeros32(m)
		st.buckets[k].Add(t.buckets[k])
		t.buckets[k] = 0
	}
	st.nanos.Add(t.nanos)
	if t.failed != 0 {
		st.failed.Add(t.failed)
	}
	t.cmd, t.touched, t.nanos, t.failed = nil, 0, 0, 0
}

// settle adds everything t counted to the server's counters.
func (s *Server) settle(t *tally) {
	t.settleCmd()
	if t.commands != 0 {
		s.stats.commands.Add(t.commands)
		t.commands = 0
	}
	if t.hits != 0 {
		s.stats.keyspaceHits.Add(t.hits)
		t.hits = 0
	}
	if t.misses != 0 {
		s.stats.keyspaceMiss.Add(t.misses)
		t.misses = 0
	}
}

// tallied reports whether cmd counts in its connection's tally: whether
// it reads or writes keys. None of those reads or resets the counters.
func tallied(cmd *Command) bool { return cmd.Flags&(Write|ReadOnly) != 0 }

// rejected counts a command refused before it ran (wrong arity, NOAUTH),
// against the command or subcommand it names, as Redis's rejected_calls.
func (s *Server) rejected(args [][]byte) {
	cmd := s.table.Lookup(args[0])
	if cmd == nil {
		return
	}
	if len(cmd.Subcommands) > 0 && len(args) > 1 && arityOK(cmd.Arity, len(args)) {
		if cmd = cmd.sub(args[1]); cmd == nil {
			return
		}
	}
	if cmd.stats != nil {
		cmd.stats.rejected.Add(1)
	}
}

// ErrorReplied counts an error reply by its code, the text up to the
// first space (Redis's errorstats). It implements resp.ErrorObserver.
func (s *Server) ErrorReplied(msg string) {
	s.obs.errorReplies.Add(1)
	code, _, _ := strings.Cut(msg, " ")
	s.obs.errMu.Lock()
	defer s.obs.errMu.Unlock()
	if s.obs.errorCodes == nil {
		s.obs.errorCodes = make(map[string]int64)
	}
	if _, ok := s.obs.errorCodes[code]; !ok && len(s.obs.errorCodes) >= maxErrorCodes {
		// As Redis: past 128 codes, errorstats stop growing (a client
		// cannot make the table grow without bound).
		return
	}
	s.obs.errorCodes[code]++
}

// maxErrorCodes bounds the errorstats table, as Redis's
// ERROR_STATS_NUMBER.
const maxErrorCodes = 128

// ErrorStat is the count of error replies of one code.
type ErrorStat struct {
	Code  string
	Count int64
}

// ErrorStats returns the error replies per code, by code.
func (s *Server) ErrorStats() []ErrorStat {
	s.obs.errMu.Lock()
	out := make([]ErrorStat, 0, len(s.obs.errorCodes))
	for code, n := range s.obs.errorCodes {
		out = append(out, ErrorStat{code, n})
	}
	s.obs.errMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// observability is the Server's state for this file, slowlog.go and
// info.go.
type observability struct {
	errorReplies atomic.Int64
	errMu        sync.Mutex
	errorCodes   map[string]int64

	// Slow log settings (slowlog-log-slower-than in µs, -1 off;
	// slowlog-max-len) and entries.
	slowerThan atomic.Int64
	slowMaxLen atomic.Int64
	slowlog    slowlog

	// blockedTimeout counts the clients blocked with a timeout
	// (clients_in_timeout_table).
	blockedTimeout atomic.Int64

	// base holds the wire's counters at the last CONFIG RESETSTAT.
	baseMu sync.Mutex
	base   wireBase

	// The sampler: instantaneous rates and the memory peak.
	sampleMu   sync.Mutex
	ops, in    instMetric
	out        instMetric
	peak       atomic.Uint64
	startupMem uint64
	stop       chan struct{}
	done       chan struct{}

	runID, replID string
	// epoch is when New ran: mono's zero. fakeClock: Config.Clock was
	// given, and wallAt reads it.
	epoch     time.Time
	fakeClock bool
}

type wireBase struct {
	accepted, rejected, netIn, netOut, reads, writes int64
}

// instSamples is the number of samples an instantaneous rate averages,
// taken every instInterval (as Redis's STATS_METRIC_SAMPLES and cron).
const (
	instSamples  = 16
	instInterval = 100 * time.Millisecond
)

// instMetric is a rate averaged over the last instSamples samples.
type instMetric struct {
	lastAt    time.Time
	lastValue int64
	samples   [instSamples]float64
	idx       int
}

func (m *instMetric) sample(now time.Time, v int64) {
	if !m.lastAt.IsZero() {
		if dt := now.Sub(m.lastAt).Seconds(); dt > 0 {
			m.samples[m.idx] = float64(v-m.lastValue) / dt
			m.idx = (m.idx + 1) % instSamples
		}
	}
	m.lastAt, m.lastValue = now, v
}

func (m *instMetric) rate() float64 {
	var sum float64
	for _, v := range m.samples {
		sum += v
	}
	return sum / instSamples
}

// Start starts the sampler of the instantaneous rates and memory peak
// (every 100 ms, as Redis's cron does). Close stops it.
func (s *Server) Start() {
	s.obs.sampleMu.Lock()
	defer s.obs.sampleMu.Unlock()
	if s.obs.stop != nil {
		return
	}
	s.obs.stop, s.obs.done = make(chan struct{}), make(chan struct{})
	go s.sampleLoop(s.obs.stop, s.obs.done)
}

// Close stops the sampler and ends a CLIENT PAUSE, whose waits (the ONCE
// engine's deferred lapses) would otherwise outlive the server; it is
// safe to call without Start, and twice.
func (s *Server) Close() {
	s.pause.unpause()
	s.obs.sampleMu.Lock()
	stop, done := s.obs.stop, s.obs.done
	s.obs.stop = nil
	s.obs.sampleMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (s *Server) sampleLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(instInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.sample(now)
		}
	}
}

func (s *Server) sample(now time.Time) {
	w := s.wireCounters()
	s.obs.sampleMu.Lock()
	s.obs.ops.sample(now, s.stats.commands.Load())
	s.obs.in.sample(now, w.netIn)
	s.obs.out.sample(now, w.netOut)
	s.obs.sampleMu.Unlock()
	s.notePeak(heapObjects())
}

// notePeak raises the memory peak to used if it is higher.
func (s *Server) notePeak(used uint64) {
	for {
		p := s.obs.peak.Load()
		if used <= p || s.obs.peak.CompareAndSwap(p, used) {
			return
		}
	}
}

// instantaneous returns the ops/s and input and output KiB/s rates.
func (s *Server) instantaneous() (ops, inKbps, outKbps float64) {
	s.obs.sampleMu.Lock()
	defer s.obs.sampleMu.Unlock()
	return s.obs.ops.rate(), s.obs.in.rate() / 1024, s.obs.out.rate() / 1024
}

// heapObjects is the memory of live and not yet swept heap objects (what
// runtime.MemStats calls HeapAlloc), read without stopping the world.
func heapObjects() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// wireCounters are the wire's counters since the last CONFIG RESETSTAT.
func (s *Server) wireCounters() wireBase {
	var w wireBase
	if s.wire != nil {
		st := s.wire.Stats()
		w = wireBase{accepted: s.wire.Accepted.Load(), rejected: s.wire.Rejected.Load(),
			netIn: st.NetInput.Load(), netOut: st.NetOutput.Load(), reads: st.Reads.Load(), writes: st.Writes.Load()}
	}
	s.obs.baseMu.Lock()
	b := s.obs.base
	s.obs.baseMu.Unlock()
	return wireBase{w.accepted - b.accepted, w.rejected - b.rejected, w.netIn - b.netIn,
		w.netOut - b.netOut, w.reads - b.reads, w.writes - b.writes}
}

// Stats is a snapshot of the server-wide counters that INFO clients and
// stats show (counters since the start or CONFIG RESETSTAT).
type Stats struct {
	ConnectedClients    int
	BlockedClients      int64
	ConnectionsReceived int64
	RejectedConnections int64
	CommandsProcessed   int64
	NetInputBytes       int64
	NetOutputBytes      int64
	KeyspaceHits        int64
	KeyspaceMisses      int64
	ExpiredKeys         int64
	ErrorReplies        int64
}

// CommandsProcessed is the number of commands processed since the start
// or CONFIG RESETSTAT (INFO's total_commands_processed), read without
// the rest of Snapshot.
func (s *Server) CommandsProcessed() int64 { return s.stats.commands.Load() }

// Snapshot reads the server-wide counters.
func (s *Server) Snapshot() Stats {
	w := s.wireCounters()
	st := Stats{
		ConnectionsReceived: w.accepted,
		RejectedConnections: w.rejected,
		CommandsProcessed:   s.stats.commands.Load(),
		NetInputBytes:       w.netIn,
		NetOutputBytes:      w.netOut,
		KeyspaceHits:        s.stats.keyspaceHits.Load(),
		KeyspaceMisses:      s.stats.keyspaceMiss.Load(),
		ExpiredKeys:         s.expiredKeys(),
		ErrorReplies:        s.obs.errorReplies.Load(),
	}
	if s.wire != nil {
		st.ConnectedClients = s.wire.NumClients()
		st.BlockedClients = s.wire.Stats().Blocked.Load()
	}
	return st
}

func (s *Server) expiredKeys() int64 {
	n := s.stats.expiredKeys.Load()
	if s.cfg.ExpiredKeys != nil {
		n += s.cfg.ExpiredKeys()
	}
	return n
}

// resetStats is CONFIG RESETSTAT: it zeroes the counters INFO shows, as
// Redis's resetServerStats (not the slow log, nor the clients).
func (s *Server) resetStats() {
	st := &s.stats
	st.commands.Store(0)
	st.keyspaceHits.Store(0)
	st.keyspaceMiss.Store(0)
	st.expiredKeys.Store(0)
	if s.cfg.ExpiredKeys != nil {
		st.expiredKeys.Store(-s.cfg.ExpiredKeys())
	}
	s.obs.errorReplies.Store(0)
	s.obs.errMu.Lock()
	s.obs.errorCodes = nil
	s.obs.errMu.Unlock()
	s.eachCommand(func(c *Command) {
		if c.stats != nil {
			c.stats.reset()
		}
	})
	if s.wire != nil {
		w := s.wire.Stats()
		s.obs.baseMu.Lock()
		s.obs.base = wireBase{s.wire.Accepted.Load(), s.wire.Rejected.Load(), w.NetInput.Load(),
			w.NetOutput.Load(), w.Reads.Load(), w.Writes.Load()}
		s.obs.baseMu.Unlock()
	}
	s.obs.peak.Store(0)
	s.notePeak(heapObjects())
}

// OnceStats are the fields of INFO once by name (nil without the ONCE
// commands), for the metrics endpoint.
func (s *Server) OnceStats() map[string]int64 {
	if s.once == nil {
		return nil
	}
	out := make(map[string]int64)
	for _, kv := range s.onceInfo() {
		if n, err := strconv.ParseInt(kv[1], 10, 64); err == nil {
			out[kv[0]] = n
		}
	}
	return out
}

// SlowlogLen is the number of entries in the slow log.
func (s *Server) SlowlogLen() int { return s.obs.slowlog.len() }

// lookup reads key as Redis's lookupKeyRead does, counting a keyspace hit
// or miss (INFO keyspace_hits, keyspace_misses); the reads of write
// commands (APPEND, INCR, RENAME…) do not count, as in Redis.
func (x *Ctx) lookup(key []byte) (store.Value, bool, error) {
	return x.getCounted(x.DB, key, true)
}

// getCounted reads key in db, counting a keyspace hit or miss when read
// (lookup's count, for the commands that read).
func (x *Ctx) getCounted(db int, key []byte, read bool) (store.Value, bool, error) {
	v, ok, err := x.Tx.Get(db, key)
	if err == nil && read {
		x.countLookup(ok)
	}
	return v, ok, err
}

// readString is getString for the commands that read (GET, GETDEL…),
// counting a hit or miss; a key of another kind is a hit.
func (x *Ctx) readString(key []byte) (store.Value, bool, error) {
	v, ok, err := x.getString(key)
	switch {
	case err == ErrWrongType:
		x.countLookup(true)
	case err == nil:
		x.countLookup(ok)
	}
	return v, ok, err
}

// countLookup counts a keyspace hit or miss, in the connection's tally.
func (x *Ctx) countLookup(hit bool) {
	t := tallyOf(x.Conn)
	switch {
	case t == nil && hit:
		x.S.stats.keyspaceHits.Add(1)
	case t == nil:
		x.S.stats.keyspaceMiss.Add(1)
	case hit:
		t.hits++
	default:
		t.misses++
	}
}
