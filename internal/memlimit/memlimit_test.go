package memlimit

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fake records what a Governor does to the runtime.
type fake struct {
	mu       sync.Mutex
	activity atomic.Int64
	held     atomic.Bool
	live     atomic.Int64
	limits   []int64
	releases int
}

func (f *fake) config(base, burst int64) Config {
	return Config{
		Base: base, Burst: burst,
		Activity: f.activity.Load,
		Held:     f.held.Load,
		Live:     f.live.Load,
		SetLimit: func(n int64) int64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.limits = append(f.limits, n)
			return 0
		},
		Release: func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.releases++
		},
	}
}

func (f *fake) state() ([]int64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.limits...), f.releases
}

// TestGovernorSteps: the limit rises when the activity reaches Busy per
// second, stays up until Calm has passed without it, then returns to the
// base and the free memory is released; a counter that restarts, and a
// process that was stopped for a while, are read right (issue 6: write
// bursts get heap room, the RSS at rest stays what the base allows).
func TestGovernorSteps(t *testing.T) {
	const base, burst = 100, 50
	type step struct {
		at       time.Duration // since t0
		activity int64
		held     bool  // writers held back
		limit    int64 // Limit() after the step
		limits   int   // SetLimit calls so far
		releases int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"busy then calm", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 500, false, base + burst, 1, 0}, // 2,000/s: busy
			{500 * time.Millisecond, 1000, false, base + burst, 1, 0},
			{750 * time.Millisecond, 1010, false, base + burst, 1, 0}, // quiet, not calm yet
			{1750 * time.Millisecond, 1015, false, base + burst, 1, 0},
			{2400 * time.Millisecond, 1020, false, base + burst, 1, 0},
			{2500 * time.Millisecond, 1030, false, base, 2, 1}, // 2 s after the last busy step
			{2750 * time.Millisecond, 1030, false, base, 2, 1},
		}},
		{"below the threshold", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 499, false, base, 0, 0},
			{500 * time.Millisecond, 998, false, base, 0, 0},
		}},
		{"busy again before calm", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 1000, false, base + burst, 1, 0},
			{2000 * time.Millisecond, 1000, false, base + burst, 1, 0},
			{2250 * time.Millisecond, 2000, false, base + burst, 1, 0}, // busy: calm starts over
			{4000 * time.Millisecond, 2000, false, base + burst, 1, 0},
			{4250 * time.Millisecond, 2000, false, base, 2, 1},
		}},
		{"counter restarts", []step{
			{0, 4000, false, base, 0, 0},
			{250 * time.Millisecond, 4000, false, base, 0, 0},
			{500 * time.Millisecond, 600, false, base + burst, 1, 0}, // RESETSTAT, then 600: busy
		}},
		{"stalled: writers held back", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 1000, false, base + burst, 1, 0},
			// No command completes for 3 s while writers wait for the
			// store: still busy.
			{750 * time.Millisecond, 1000, true, base + burst, 1, 0},
			{1250 * time.Millisecond, 1000, true, base + burst, 1, 0},
			{1750 * time.Millisecond, 1000, true, base + burst, 1, 0},
			{2250 * time.Millisecond, 1000, true, base + burst, 1, 0},
			{2750 * time.Millisecond, 1000, true, base + burst, 1, 0},
			{3250 * time.Millisecond, 1000, true, base + burst, 1, 0},
			{3750 * time.Millisecond, 1000, false, base + burst, 1, 0},
			{4750 * time.Millisecond, 1000, false, base + burst, 1, 0},
			{5250 * time.Millisecond, 1000, false, base, 2, 1}, // calm 2 s after the stall
		}},
		{"held back from the start", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 0, true, base + burst, 1, 0},
		}},
		{"stopped, resumed into quiet", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 5000, false, base + burst, 1, 0},
			// SIGSTOP for a minute: the first step after it starts a
			// new measure; the next finds no load, and the last busy
			// step long past.
			{60 * time.Second, 5000, false, base + burst, 1, 0},
			{60*time.Second + 250*time.Millisecond, 5010, false, base, 2, 1},
		}},
		{"stopped, resumed into a load", []step{
			{0, 0, false, base, 0, 0},
			{250 * time.Millisecond, 5000, false, base + burst, 1, 0},
			// 10,000 commands over the minute's gap would average to
			// 167/s; the gap is not judged, and the load after it is.
			{60 * time.Second, 15000, false, base + burst, 1, 0},
			{60*time.Second + 250*time.Millisecond, 16000, false, base + burst, 1, 0},
			{62*time.Second + 250*time.Millisecond, 16000, false, base + burst, 1, 0},
			{62*time.Second + 500*time.Millisecond, 16000, false, base, 2, 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			cfg := f.config(base, burst)
			cfg.Tick = 250 * time.Millisecond
			g := New(cfg)
			t0 := time.Unix(1000, 0)
			g.lastAt = t0
			for i, s := range tt.steps {
				f.activity.Store(s.activity)
				f.held.Store(s.held)
				g.step(t0.Add(s.at))
				limits, releases := f.state()
				if got := g.Limit(); got != s.limit {
					t.Fatalf("step %d: Limit() = %d, want %d", i, got, s.limit)
				}
				if len(limits) != s.limits || releases != s.releases {
					t.Fatalf("step %d: SetLimit calls %v, releases %d; want %d calls, %d releases", i, limits, releases, s.limits, s.releases)
				}
				if len(limits) > 0 && limits[len(limits)-1] != s.limit {
					t.Fatalf("step %d: last SetLimit(%d), want %d", i, limits[len(limits)-1], s.limit)
				}
			}
		})
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGovernorRuns: started, the Governor sets the base, follows a load
// on its own, and Close leaves the base in force even when raised.
func TestGovernorRuns(t *testing.T) {
	const base, burst = 1 << 30, 1 << 20
	f := &fake{}
	cfg := f.config(base, burst)
	cfg.Tick, cfg.Calm = 5*time.Millisecond, 30*time.Millisecond
	g := New(cfg)
	g.Start()
	if limits, _ := f.state(); len(limits) != 1 || limits[0] != base {
		t.Fatalf("after Start, SetLimit calls %v, want [%d]", limits, base)
	}

	load := func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
				f.activity.Add(100)
				time.Sleep(time.Millisecond)
			}
		}
	}
	stop := make(chan struct{})
	go load(stop)
	waitFor(t, "the limit to rise under load", func() bool { return g.Limit() == base+burst })
	close(stop)
	waitFor(t, "the limit to return once calm", func() bool { return g.Limit() == base })
	if _, releases := f.state(); releases != 1 {
		t.Fatalf("released %d times, want 1", releases)
	}

	stop = make(chan struct{})
	go load(stop)
	waitFor(t, "the limit to rise again", func() bool { return g.Limit() == base+burst })
	g.Close()
	close(stop)
	limits, _ := f.state()
	if last := limits[len(limits)-1]; last != base || g.Limit() != base {
		t.Fatalf("after Close, last SetLimit(%d), Limit() %d; want the base %d", last, g.Limit(), base)
	}
	g.Close() // twice is fine
}

// stepped starts a Governor for cfg whose own loop never ticks, and
// returns it with the time its measure starts from (activity 0): the test
// steps it by hand from there.
func stepped(f *fake, cfg Config) (*Governor, time.Time) {
	cfg.Tick = time.Hour
	g := New(cfg)
	g.Start()
	t0 := time.Unix(1000, 0)
	g.mu.Lock()
	g.lastAt, g.last = t0, f.activity.Load()
	g.mu.Unlock()
	return g, t0
}

// TestGovernorWithoutBurst: Burst 0 sets the base and never raises it
// for a load; a nil Governor (GOMEMLIMIT set, proxy mode) is a no-op.
func TestGovernorWithoutBurst(t *testing.T) {
	f := &fake{}
	g, t0 := stepped(f, f.config(100, 0))
	f.activity.Store(1 << 40)
	g.step(t0.Add(250 * time.Millisecond))
	if got := g.Limit(); got != 100 {
		t.Fatalf("under load, Limit() = %d, want the base 100", got)
	}
	g.Close()
	if limits, releases := f.state(); len(limits) != 1 || limits[0] != 100 || releases != 0 {
		t.Fatalf("SetLimit calls %v, releases %d; want [100], 0", limits, releases)
	}
	var none *Governor
	none.Start()
	none.Close()

	unstarted := New(f.config(100, 10))
	unstarted.Close() // never started: returns at once
}

// TestGovernorFollowsLiveHeap: the limit is never under half again the
// live heap, busy or calm, with or without a burst: a limit under the live
// heap runs the collector without pause (issue 6: SET -P 16 lost 30-60% of
// its requests/s with 1.2M claims in flight). It follows the live heap up
// at once and down once it has fallen by an eighth.
func TestGovernorFollowsLiveHeap(t *testing.T) {
	const base, burst = 1000, 500
	type step struct {
		activity int64 // per 250 ms step
		live     int64
		limit    int64 // Limit() after the step
		limits   int   // SetLimit calls so far
	}
	tests := []struct {
		name        string
		base, burst int64
		startLive   int64
		startLimit  int64
		steps       []step
	}{
		{"calm", base, burst, 0, base, []step{
			{0, 600, base, 1}, // 900 < base
			{0, 700, 1050, 2}, // over the base: followed at once
			{0, 800, 1200, 3}, //
			{0, 760, 1200, 3}, // 1140 is within an eighth of 1200
			{0, 690, 1035, 4}, // an eighth lower: followed
			{0, 100, base, 5}, // back to the base
		}},
		{"busy", base, burst, 0, base, []step{
			{1000, 100, base + burst, 2}, // raised
			{1000, 1100, 1650, 3},        // the floor passes the burst
			{1000, 900, base + burst, 4},
			{0, 900, base + burst, 4}, {0, 900, base + burst, 4}, {0, 900, base + burst, 4},
			{0, 900, base + burst, 4}, {0, 900, base + burst, 4}, {0, 900, base + burst, 4},
			{0, 900, base + burst, 4},
			// 2 s after the last busy step: calm, and the floor 1350 over
			// the base holds.
			{0, 900, 1350, 5}, {0, 900, 1350, 5},
		}},
		{"no burst", base, 0, 2000, 3000, []step{ // a heap already large at Start
			{1000, 2000, 3000, 1},
			{1000, 400, base, 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			f.live.Store(tt.startLive)
			g, t0 := stepped(f, f.config(tt.base, tt.burst))
			defer g.Close()
			if got := g.Limit(); got != tt.startLimit {
				t.Fatalf("after Start, Limit() = %d, want %d", got, tt.startLimit)
			}
			var total int64
			for i, s := range tt.steps {
				total += s.activity
				f.activity.Store(total)
				f.live.Store(s.live)
				g.step(t0.Add(time.Duration(i+1) * 250 * time.Millisecond))
				limits, _ := f.state()
				if got := g.Limit(); got != s.limit {
					t.Fatalf("step %d (live %d): Limit() = %d, want %d", i, s.live, got, s.limit)
				}
				if len(limits) != s.limits || limits[len(limits)-1] != s.limit {
					t.Fatalf("step %d: SetLimit calls %v, want %d ending with %d", i, limits, s.limits, s.limit)
				}
			}
		})
	}
}

// TestGovernorChangedSaysBusy: Changed (the log line) is told whether the
// server is busy, also when the live heap alone moved the limit.
func TestGovernorChangedSaysBusy(t *testing.T) {
	f := &fake{}
	cfg := f.config(1000, 500)
	type change struct {
		limit int64
		busy  bool
	}
	var got []change
	cfg.Changed = func(limit int64, busy bool) { got = append(got, change{limit, busy}) }
	g, t0 := stepped(f, cfg)
	defer g.Close()
	f.live.Store(800) // calm, the floor 1200 over the base
	g.step(t0.Add(250 * time.Millisecond))
	f.activity.Store(1000) // busy: raised to 1500
	g.step(t0.Add(500 * time.Millisecond))
	f.live.Store(1200) // busy, the floor 1800 over the burst
	g.step(t0.Add(750 * time.Millisecond))
	want := []change{{1200, false}, {1500, true}, {1800, true}}
	if !slices.Equal(got, want) {
		t.Fatalf("Changed calls %v, want %v", got, want)
	}
}

// TestLiveHeap: LiveHeap reads the heap the last collection kept.
func TestLiveHeap(t *testing.T) {
	const size = 64 << 20
	keep := make([]byte, size)
	for i := range keep {
		keep[i] = byte(i)
	}
	runtime.GC()
	if got := LiveHeap(); got < size {
		t.Fatalf("LiveHeap() = %d with %d bytes held, want at least that", got, size)
	}
	runtime.KeepAlive(keep)
}

// TestSum: the sum of counters only grows, and one counter's restart
// (CONFIG RESETSTAT resets commands, not expired keys) adds what that
// counter counted since, not the other counters' totals again.
func TestSum(t *testing.T) {
	var cmds, expired int64
	sum := Sum(func() int64 { return cmds }, func() int64 { return expired })
	for _, step := range []struct {
		cmds, expired, want int64
	}{
		{0, 0, 0},
		{100, 0, 100},
		{150, 10_000, 10_150},
		{5, 10_000, 10_155},       // commands restarted: 5 since
		{20, 10_001, 10_171},      // +15 commands, +1 expired
		{20, 10_001, 10_171},      // nothing
		{20, 3, 10_174},           // expired restarted (a new store): 3 since
		{1_000_000, 3, 1_010_154}, // a burst of commands
	} {
		cmds, expired = step.cmds, step.expired
		if got := sum(); got != step.want {
			t.Fatalf("sum after commands %d, expired %d = %d, want %d", step.cmds, step.expired, got, step.want)
		}
	}
}
