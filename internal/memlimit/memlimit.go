// Package memlimit governs the Go runtime's soft memory limit of a
// server: a base limit at rest, raised by a burst allowance while the
// server is busy, and handed back once the load stops.
//
// Why: the base limit (the caches the configuration sizes, plus
// headroom) keeps a loaded server's RSS near its live data at rest. Under
// a stream of writes, though, the live heap sits close to it (Badger's
// table builders alone hold tens of megabytes while they flush and
// compact), so the collector runs back to back: in a CPU profile of
// redis-benchmark SET -d 256 -P 16 with the default configuration, a third
// to two fifths of the server's CPU. With 48 MiB more, 10–40% more writes
// per second under -P 16. The burst allowance buys that while the load
// lasts; when it stops, the limit returns to the base and
// the freed memory goes back to the kernel, so the RSS at rest is what
// the base allows.
//
// Neither is ever below half again the live heap, though: data the
// configuration does not size (a keyspace's index, a million claims in
// flight) can outgrow any fixed limit, and a limit under the live heap
// makes the collector run without pause, taking up to half the CPU for
// good (measured: 1.2M claims in flight, SET -P 16 at 40–72k requests/s
// and 24–43 µs of CPU each, against 96–101k and 15–16 µs with no limit).
// Above the live heap by half, each collection lets the heap grow by at
// least that half again before the next, which bounds the collector's
// share as GOGC=50 would.
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Config configures a Governor.
type Config struct {
	// Base is the limit at rest, Burst what a busy server may use on top
	// of it (bytes). A Governor with Burst <= 0 never raises the base for a
	// load (the live heap's floor, in the package comment, still holds).
	Base, Burst int64
	// Activity counts the work done so far (a server's commands
	// processed and keys expired, Sum). It may restart from 0 (CONFIG
	// RESETSTAT): a reading below the last one is a restart, and counts
	// as the work done since.
	Activity func() int64
	// Held, if set, reports whether work is held back at this moment
	// waiting for the server to catch up (writers under back-pressure):
	// the server then counts as busy, though it processes no command.
	// Lowering the limit there would run the collector without pause
	// against the very work the writers wait for. (Writers held when
	// the store starts refusing writes after a disk error stay held
	// until it recovers, and the limit stays raised with them.)
	Held func() bool
	// Busy is the activity per second from which the server counts as
	// busy; 0 is DefaultBusy.
	Busy int64
	// Calm is how long the server must not be busy before the limit
	// returns to the base; 0 is DefaultCalm.
	Calm time.Duration
	// Tick is how often the activity is read; 0 is DefaultTick.
	Tick time.Duration
	// SetLimit sets the runtime's limit (nil: debug.SetMemoryLimit), and
	// Release hands the heap's free memory back to the kernel (nil:
	// debug.FreeOSMemory). Tests replace them.
	SetLimit func(int64) int64
	Release  func()
	// Live reports the heap that the last collection found live
	// (nil: LiveHeap). Tests replace it.
	Live func() int64
	// Changed, if set, is told each time a step raises or lowers the
	// limit, with the new limit (for the log); it runs in the Governor's
	// goroutine.
	Changed func(limit int64, busy bool)
}

// The defaults: busy from 2,000 units of activity a second, commands or
// expired keys (a client or two at idle speed is not busy; any benchmark,
// batch job or mass expiry is), read four times a second, calm after 2 s
// without.
const (
	DefaultBusy = 2000
	DefaultCalm = 2 * time.Second
	DefaultTick = 250 * time.Millisecond
)

// gapTicks is how many ticks may pass between two steps before the
// second only starts a new measure (step).
const gapTicks = 4

// Governor raises and lowers the runtime's soft memory limit with the
// load (see the package comment).
type Governor struct {
	cfg Config

	mu      sync.Mutex
	raised  bool
	limit   int64     // the limit in force (SetLimit's last)
	last    int64     // Activity at the last step
	lastAt  time.Time // when it was read
	busyAt  time.Time // the last step that found the server busy
	stop    chan struct{}
	done    chan struct{}
	started bool
}

// New returns a Governor for cfg; it starts nothing (Start).
func New(cfg Config) *Governor {
	if cfg.Busy <= 0 {
		cfg.Busy = DefaultBusy
	}
	if cfg.Calm <= 0 {
		cfg.Calm = DefaultCalm
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.SetLimit == nil {
		cfg.SetLimit = debug.SetMemoryLimit
	}
	if cfg.Release == nil {
		cfg.Release = debug.FreeOSMemory
	}
	if cfg.Live == nil {
		cfg.Live = LiveHeap
	}
	return &Governor{cfg: cfg, limit: cfg.Base, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start sets the base limit (or the live heap's floor, if higher) and
// watches the activity and the live heap until Close. A nil Governor does
// nothing.
func (g *Governor) Start() {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.started {
		g.mu.Unlock()
		return
	}
	g.started = true
	g.set(max(g.cfg.Base, floor(g.cfg.Live())))
	g.last, g.lastAt = g.cfg.Activity(), time.Now()
	g.mu.Unlock()
	go g.loop()
}

// Close stops watching and leaves the base limit in force. A nil
// Governor does nothing.
func (g *Governor) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	started := g.started
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	g.mu.Unlock()
	if !started {
		return
	}
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	g.raised = false
	if g.limit != g.cfg.Base {
		g.set(g.cfg.Base)
	}
}

func (g *Governor) loop() {
	defer close(g.done)
	t := time.NewTicker(g.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case now := <-t.C:
			g.step(now)
		}
	}
}

// step reads the activity at now and raises or lowers the limit; the
// loop calls it every Tick (tests call it directly).
//
// The rate is the activity since the last step over the time since it.
// A step that comes more than gapTicks ticks after the last one (the
// process was stopped, SIGSTOP, or starved) only starts a new measure:
// its rate would average the gap in and call a busy server calm. So a
// server resumed into a load keeps its raised limit, and one resumed
// into quiet lowers it at the next step, its last busy step being long
// past.
func (g *Governor) step(now time.Time) {
	limit, lowered, busy := g.measure(now)
	if limit != 0 && g.cfg.Changed != nil {
		g.cfg.Changed(limit, busy)
	}
	if lowered {
		// The heap may have grown past the base meanwhile: collect now
		// and hand the free pages back, rather than let the scavenger
		// return them over minutes. Outside mu: it runs a whole
		// collection.
		g.cfg.Release()
	}
}

// measure is step under mu: it returns the limit it set, if any (else 0),
// whether the server turned calm (the limit left the burst), and whether
// it is busy (raised).
func (g *Governor) measure(now time.Time) (limit int64, lowered, busy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	changed := g.judge(now)
	lowered = changed && !g.raised
	target := g.cfg.Base
	if g.raised {
		target = g.high()
	}
	want := max(target, floor(g.cfg.Live()))
	// The floor moves with every collection: follow it up at once, and
	// down only once it has fallen by an eighth or under the target (or
	// the target moved), so that a heap hovering about one size does not
	// reset the limit each tick.
	down := want < g.limit && (changed || want == target || want < g.limit-g.limit/8)
	if want > g.limit || down {
		g.set(want)
		return want, lowered, g.raised
	}
	return 0, lowered, g.raised
}

// judge reads the activity at now and reports whether the server turned
// busy (raised) or calm since the last step. A Governor without a burst
// is never raised.
func (g *Governor) judge(now time.Time) bool {
	n := g.cfg.Activity()
	done := n - g.last
	if done < 0 { // the counter restarted
		done = n
	}
	elapsed := now.Sub(g.lastAt)
	g.last, g.lastAt = n, now
	if g.cfg.Burst <= 0 || elapsed <= 0 || elapsed > gapTicks*g.cfg.Tick {
		return false
	}
	busy := float64(done) >= float64(g.cfg.Busy)*elapsed.Seconds() ||
		(g.cfg.Held != nil && g.cfg.Held())
	switch {
	case busy:
		g.busyAt = now
		if !g.raised {
			g.raised = true
			return true
		}
	case g.raised && now.Sub(g.busyAt) >= g.cfg.Calm:
		g.raised = false
		return true
	}
	return false
}

// set puts limit in force.
func (g *Governor) set(limit int64) {
	g.cfg.SetLimit(limit)
	g.limit = limit
}

// high is the raised limit: Base + Burst, or the largest limit when that
// overflows.
func (g *Governor) high() int64 {
	if g.cfg.Burst > math.MaxInt64-g.cfg.Base {
		return math.MaxInt64
	}
	return g.cfg.Base + g.cfg.Burst
}

// floor is the lowest limit for a live heap of live bytes: half again
// as much (see the package comment).
func floor(live int64) int64 {
	if live > math.MaxInt64/3*2 {
		return math.MaxInt64
	}
	return live + live/2
}

// Limit is the limit the Governor has in force: the base, or the base
// plus the burst while raised, or the live heap's floor when that is
// higher.
func (g *Governor) Limit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

// liveMetric is the runtime's measure of the heap the last collection
// marked live.
const liveMetric = "/gc/heap/live:bytes"

// LiveHeap returns the bytes of heap that the last garbage collection
// found live (0 before the first).
func LiveHeap() int64 {
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	v := s[0].Value.Uint64()
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// Sum returns an activity counter (Config.Activity) that adds up
// counters, each of which may restart from 0 on its own: a restart of
// one adds what it has counted since, and the sum never goes back. (A
// plain sum would read one counter's restart as the whole sum's, and
// count everything the others had counted since the start as one tick's
// work.)
func Sum(counters ...func() int64) func() int64 {
	var mu sync.Mutex
	last := make([]int64, len(counters))
	var total int64
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		for i, c := range counters {
			n := c()
			d := n - last[i]
			if d < 0 { // this counter restarted
				d = n
			}
			last[i] = n
			total += d
		}
		return total
	}
}
