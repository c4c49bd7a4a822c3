package app

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// idleReleaser hands the heap's free memory back to the operating system
// when the server goes idle, as jemalloc's decay does for Redis.
//
// The Go collector runs when the program allocates; a server that stops
// receiving commands stops allocating, so the garbage of its last burst
// stays in its RSS (up to the heap goal, twice the live heap) until the
// runtime's forced collection two minutes later, and even then the
// scavenger keeps up to the heap goal mapped. Once no command has run for
// idleAfter, the releaser runs one collection and returns every free page
// (debug.FreeOSMemory), and again if the heap grows by releaseGrowth while
// it stays idle (the store's compactions and applies go on for a while
// after the last write).
type idleReleaser struct {
	activity func() uint64 // commands run so far
	release  func()        // debug.FreeOSMemory, or a test's
	heap     func() uint64 // bytes of heap the process holds
	every    time.Duration // how often it looks
	after    time.Duration // idle time before a release

	stop chan struct{}
	done chan struct{}
}

const (
	idleAfter     = 2 * time.Second
	releaseGrowth = 32 << 20
)

func newIdleReleaser(activity func() uint64) *idleReleaser {
	return &idleReleaser{
		activity: activity,
		release:  debug.FreeOSMemory,
		heap:     heapHeld,
		every:    500 * time.Millisecond,
		after:    idleAfter,
	}
}

// Start starts the releaser's goroutine; Close stops it.
func (r *idleReleaser) Start() {
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.loop()
}

// Close stops the releaser; it is safe to call without Start.
func (r *idleReleaser) Close() {
	if r.stop == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.stop = nil
}

func (r *idleReleaser) loop() {
	defer close(r.done)
	t := time.NewTicker(r.every)
	defer t.Stop()
	last, since := r.activity(), time.Now()
	released, heapAfter := true, uint64(0) // nothing to release at start
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			if a := r.activity(); a != last {
				last, since, released = a, now, false
				continue
			}
			if now.Sub(since) < r.after {
				continue
			}
			if released && r.heap() < heapAfter+releaseGrowth {
				continue
			}
			r.release()
			released, heapAfter = true, r.heap()
		}
	}
}

// heapHeld is the memory the Go heap holds from the operating system:
// what it has mapped minus what it has returned.
func heapHeld() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
