// Package oncejson is the JSON that bench/oncebench writes with -json and
// bench/harness reads into BENCHMARKS.md: one definition for both, so that
// a field renamed on one side cannot go unnoticed on the other.
package oncejson

// Summary holds oncebench's headline figures.
type Summary struct {
	Clients int      `json:"clients"`
	Cycles  []Cycle  `json:"cycles"`
	Ratios  []Ratio  `json:"ratios"` // per client library
	Wakeups []Wakeup `json:"wakeups"`
}

// Cycle is one system's claim+complete rate with one client library.
type Cycle struct {
	Client   string  `json:"client"`
	System   string  `json:"system"`
	Oncekv   bool    `json:"oncekv"`
	Floor    bool    `json:"floor"` // PING + PING: no work, never a baseline
	RTTs     int     `json:"rtts"`
	Median   float64 `json:"cycles_per_s"`
	P50Micro float64 `json:"p50_us"`
	P99Micro float64 `json:"p99_us"`
}

// Ratio compares, for one client library, the plain ONCE.CLAIM +
// ONCE.COMPLETE system with the fastest baseline.
type Ratio struct {
	Client       string  `json:"client"`
	Oncekv       float64 `json:"oncekv_cycles_per_s"`
	BestBaseline string  `json:"best_baseline"`
	Baseline     float64 `json:"baseline_cycles_per_s"`
	Ratio        float64 `json:"ratio"`
	// The floors, PING + PING cycles/s on each server (0: not measured):
	// what the client and the machine allow a cycle of two round trips.
	OncekvFloor float64 `json:"oncekv_floor_cycles_per_s,omitempty"`
	RedisFloor  float64 `json:"redis_floor_cycles_per_s,omitempty"`
}

// Wakeup is the wake-up latency of one waiter count, oncekv's and the
// references'.
type Wakeup struct {
	Waiters   int     `json:"waiters"`
	Samples   int     `json:"samples"`
	OnceP50us float64 `json:"oncekv_p50_us"`
	OnceP99us float64 `json:"oncekv_p99_us"`
	// redis-server references (0: not measured, see -wake-refs)
	PublishP50us float64 `json:"publish_p50_us,omitempty"`
	PublishP99us float64 `json:"publish_p99_us,omitempty"`
	BlpopP50us   float64 `json:"blpop_p50_us,omitempty"`
	BlpopP99us   float64 `json:"blpop_p99_us,omitempty"`
	PollP50us    float64 `json:"poll_p50_us,omitempty"`
	PollP99us    float64 `json:"poll_p99_us,omitempty"`
	// keys oncekv expired while these rounds ran (0: none, or unknown)
	OnceExpiredKeys int64 `json:"oncekv_expired_keys,omitempty"`
	// the floor, no server (0: not measured)
	LoopbackP50us float64 `json:"loopback_p50_us,omitempty"`
	LoopbackP99us float64 `json:"loopback_p99_us,omitempty"`
	// the floor with no network: goroutines woken by a channel's close
	// (0: not measured)
	GoroutinesP50us float64 `json:"goroutines_p50_us,omitempty"`
	GoroutinesP99us float64 `json:"goroutines_p99_us,omitempty"`
	PollPeriod      string  `json:"poll_period"`
	Reader          string  `json:"reader"`
}
