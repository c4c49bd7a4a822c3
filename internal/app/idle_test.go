package app

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeIdle is an idleReleaser over counters the test moves.
func fakeIdle(tb testing.TB) (r *idleReleaser, commands, heap, releases *atomic.Uint64) {
	tb.Helper()
	commands, heap, releases = new(atomic.Uint64), new(atomic.Uint64), new(atomic.Uint64)
	r = &idleReleaser{
		activity: commands.Load,
		release:  func() { releases.Add(1) },
		heap:     heap.Load,
		every:    5 * time.Millisecond,
		after:    50 * time.Millisecond,
	}
	r.Start()
	tb.Cleanup(r.Close)
	return r, commands, heap, releases
}

// waitReleases waits up to a second for the count of releases to reach want,
// then checks that it stays there for a while.
func waitReleases(tb testing.TB, releases *atomic.Uint64, want uint64, step string) {
	tb.Helper()
	deadline := time.Now().Add(time.Second)
	for releases.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond)
	if got := releases.Load(); got != want {
		tb.Fatalf("%s: %d releases, want %d", step, got, want)
	}
}

// Memory goes back once per idle period after activity, not while commands
// run, not over and over while idle, and again when the heap grows while
// the server stays idle.
func TestIdleReleaser(t *testing.T) {
	_, commands, heap, releases := fakeIdle(t)
	waitReleases(t, releases, 0, "idle from the start")

	// Busy: a command every 10 ms, longer than the idle time in all.
	for i := 0; i < 20; i++ {
		commands.Add(1)
		time.Sleep(10 * time.Millisecond)
	}
	if got := releases.Load(); got != 0 {
		t.Fatalf("%d releases while commands ran", got)
	}
	waitReleases(t, releases, 1, "idle after commands")

	heap.Add(releaseGrowth / 2)
	waitReleases(t, releases, 1, "idle, heap grew by less than releaseGrowth")
	heap.Add(releaseGrowth)
	waitReleases(t, releases, 2, "idle, heap grew by releaseGrowth")

	commands.Add(1)
	waitReleases(t, releases, 3, "idle again after one more command")
}

// The real release returns the heap's free pages: after garbage is made
// and dropped, the heap holds less once released.
func TestHeapHeldDropsOnRelease(t *testing.T) {
	var keep [][]byte
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
	keep = nil
	_ = keep
	before := heapHeld()
	newIdleReleaser(nil).release()
	if after := heapHeld(); after >= before {
		t.Fatalf("heap held %d bytes before the release, %d after", before, after)
	}
}
