package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWakeReport checks the wake-up section of the report and the
// summary: a column pair per measured system, the references' figures
// next to oncekv's for the largest waiter count, and nothing for the
// references not measured.
func TestWakeReport(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var d []time.Duration
		for _, v := range vs {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	wakes := []wakeResult{
		{waiters: 1, rounds: 2, once: ms(1, 1), publish: ms(2, 2), blpop: ms(3, 3), redis: ms(9, 9), loopback: ms(1, 2), goroutines: ms(1, 1)},
		{waiters: 2, rounds: 1, once: ms(4, 6), publish: ms(5, 7), blpop: ms(8, 10), redis: ms(11, 12), loopback: ms(3, 4), goroutines: ms(1, 2)},
	}
	pick := func(refs []string, ref string, d []time.Duration) []time.Duration {
		if slices.Contains(refs, ref) {
			return slices.Clone(d)
		}
		return nil
	}
	for _, tc := range []struct {
		name      string
		refs      []string
		want, not []string
	}{
		{
			name: "all",
			refs: allWakeRefs,
			want: []string{
				"| waiters | rounds | samples each | oncekv p50 | oncekv p99 | redis PUBLISH p50 | redis PUBLISH p99 | redis BLPOP p50 | redis BLPOP p99 | redis GET poll p50 | redis GET poll p99 | floor (no server) p50 | floor (no server) p99 | floor (no network) p50 | floor (no network) p99 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
				"| 1 | 2 | 2 | 1.00 ms | 1.00 ms | 2.00 ms | 2.00 ms | 3.00 ms | 3.00 ms | 9.00 ms | 9.00 ms | 1.00 ms | 2.00 ms | 1.00 ms | 1.00 ms |\n",
				"| 2 | 1 | 2 | 4.00 ms | 6.00 ms | 5.00 ms | 7.00 ms | 8.00 ms | 10.00 ms | 11.00 ms | 12.00 ms | 3.00 ms | 4.00 ms | 1.00 ms | 2.00 ms |\n",
				"- **2 waiters: oncekv p50 4.00 ms, p99 6.00 ms; reference redis PUBLISH p50 5.00 ms, p99 7.00 ms; reference redis BLPOP p50 8.00 ms, p99 10.00 ms; floor (no server) p50 3.00 ms, p99 4.00 ms; floor (no network) p50 1.00 ms, p99 2.00 ms**\n",
				"`PUBLISH channel <answer>`", "`BLPOP k 0`", "polling `GET k`", "accepts the N connections itself", "woken by closing it",
			},
		},
		{
			name: "publish only",
			refs: []string{refPublish},
			want: []string{
				"| waiters | rounds | samples each | oncekv p50 | oncekv p99 | redis PUBLISH p50 | redis PUBLISH p99 |\n|---:|---:|---:|---:|---:|---:|---:|\n",
				"- **2 waiters: oncekv p50 4.00 ms, p99 6.00 ms; reference redis PUBLISH p50 5.00 ms, p99 7.00 ms**\n",
			},
			not: []string{"BLPOP", "redis GET poll", "polling `GET k`", "floor", "goroutines of this process"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{wakeRefs: tc.refs, wakeReader: readerEpoll, poll: 10 * time.Millisecond}
			var ws []wakeResult
			for _, w := range wakes {
				w.once = slices.Clone(w.once)
				w.publish, w.blpop, w.redis = pick(tc.refs, refPublish, w.publish), pick(tc.refs, refBlpop, w.blpop), pick(tc.refs, refPoll, w.redis)
				w.loopback = pick(tc.refs, refLoopback, w.loopback)
				w.goroutines = pick(tc.refs, refGoroutines, w.goroutines)
				ws = append(ws, w)
			}
			sum := summarize(o, nil, nil, ws)
			var b strings.Builder
			wakeReport(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, o, ws, sum)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("report has %q:\n%s", n, b.String())
				}
			}
			if !slices.Contains(tc.refs, refBlpop) && (sum.Wakeups[1].BlpopP99us != 0 || sum.Wakeups[1].PollP99us != 0 || sum.Wakeups[1].LoopbackP99us != 0 || sum.Wakeups[1].GoroutinesP99us != 0) {
				t.Errorf("summary %+v: figures for references not measured", sum.Wakeups[1])
			}
			if got := sum.Wakeups[1].PublishP99us; got != 7000 {
				t.Errorf("summary PUBLISH p99 %v µs, want 7000", got)
			}
		})
	}
}
