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
package memlimit

import (
	"math"
	"runtime/debug"
	"sync"
	"time"
)

// Config configures a Governor.
type Config struct {
	// Base is the limit at rest, Burst what a busy server may use on top
	// of it (bytes). A Governor with Burst <= 0 holds the base.
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
	return &Governor{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start sets the base limit and watches the activity until Close. A nil
// Governor does nothing.
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
	g.cfg.SetLimit(g.cfg.Base)
	g.last, g.lastAt = g.cfg.Activity(), time.Now()
	g.mu.Unlock()
	if g.cfg.Burst <= 0 {
		close(g.done)
		return
	}
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
	if g.raised {
		g.raised = false
		g.cfg.SetLimit(g.cfg.Base)
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
	limit, lowered := g.measure(now)
	if limit != 0 && g.cfg.Changed != nil {
		g.cfg.Changed(limit, !lowered)
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
// and whether it lowered it.
func (g *Governor) measure(now time.Time) (limit int64, lowered bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.cfg.Activity()
	done := n - g.last
	if done < 0 { // the counter restarted
		done = n
	}
	elapsed := now.Sub(g.lastAt)
	g.last, g.lastAt = n, now
	if elapsed <= 0 || elapsed > gapTicks*g.cfg.Tick {
		return 0, false
	}
	busy := float64(done) >= float64(g.cfg.Busy)*elapsed.Seconds() ||
		(g.cfg.Held != nil && g.cfg.Held())
	switch {
	case busy:
		g.busyAt = now
		if !g.raised {
			g.raised = true
			g.cfg.SetLimit(g.high())
			return g.high(), false
		}
	case g.raised && now.Sub(g.busyAt) >= g.cfg.Calm:
		g.raised = false
		g.cfg.SetLimit(g.cfg.Base)
		return g.cfg.Base, true
	}
	return 0, false
}

// high is the raised limit: Base + Burst, or the largest limit when that
// overflows.
func (g *Governor) high() int64 {
	if g.cfg.Burst > math.MaxInt64-g.cfg.Base {
		return math.MaxInt64
	}
	return g.cfg.Base + g.cfg.Burst
}

// Limit is the limit the Governor has in force: the base, or the base
// plus the burst while raised.
func (g *Governor) Limit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raised {
		return g.high()
	}
	return g.cfg.Base
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
