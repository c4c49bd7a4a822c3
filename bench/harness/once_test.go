package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOnceMarkdownWakeupReference checks that the wake-up target of the
// ONCE section, and so the summary row, carries redis-server's reference
// wake-ups from oncebench's -json next to oncekv's figure, and leaves out
// the ones not measured.
func TestOnceMarkdownWakeupReference(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want, not  []string
	}{
		{
			name: "all",
			json: `{"clients":50,"wakeups":[
				{"waiters":50,"samples":500,"oncekv_p50_us":100,"oncekv_p99_us":200,"publish_p50_us":90,"publish_p99_us":180,"poll_period":"10ms"},
				{"waiters":1000,"samples":10000,"oncekv_p50_us":6000,"oncekv_p99_us":13000,"publish_p50_us":4000,"publish_p99_us":8500,
				 "blpop_p50_us":5000,"blpop_p99_us":9000,"poll_p50_us":12000,"poll_p99_us":21000,"poll_period":"10ms",
				 "loopback_p50_us":3000,"loopback_p99_us":7000,"goroutines_p50_us":600,"goroutines_p99_us":1200}]}`,
			want: []string{"| ONCE waiter wake-up p99 < 1 ms with 1000 waiters | p99 13.00 ms, p50 6.00 ms over 10000 wake-ups; " +
				"redis-server reference, one PUBLISH to 1000 subscribers: p99 8.50 ms, p50 4.00 ms; " +
				"one RPUSH to 1000 clients in BLPOP: p99 9.00 ms, p50 5.00 ms (GET polling every 10ms: p99 21.00 ms); " +
				"floor with no server, one write to each of 1000 loopback connections: p99 7.00 ms, p50 3.00 ms; " +
				"floor with no network, 1000 goroutines woken by closing one channel: p99 1.20 ms, p50 600 µs | no |"},
		},
		{
			name: "keys expiring meanwhile",
			json: `{"clients":50,"wakeups":[{"waiters":1000,"samples":10,"oncekv_p50_us":8000,"oncekv_p99_us":52000,"poll_period":"10ms","oncekv_expired_keys":123456}]}`,
			want: []string{"| ONCE waiter wake-up p99 < 1 ms with 1000 waiters | p99 52.00 ms, p50 8.00 ms over 10 wake-ups; oncekv expired 123456 keys meanwhile (the cycle part's answers) | no |"},
		},
		{
			name: "oncekv only, met",
			json: `{"clients":50,"wakeups":[{"waiters":1000,"samples":10,"oncekv_p50_us":300,"oncekv_p99_us":900,"poll_period":"10ms"}]}`,
			want: []string{"| ONCE waiter wake-up p99 < 1 ms with 1000 waiters | p99 900 µs, p50 300 µs over 10 wake-ups | **yes** |"},
			not:  []string{"PUBLISH", "BLPOP", "polling", "floor"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum onceSummary
			if err := json.Unmarshal([]byte(tc.json), &sum); err != nil {
				t.Fatal(err)
			}
			sec := onceMarkdown(sectionHead{title: "ONCE", runLine: "run", command: "oncebench"}, "### Waiter wake-up latency after COMPLETE\n\ntable\n", sum)
			if !strings.Contains(sec, "### ONCE: Waiter wake-up latency") {
				t.Errorf("section lacks oncebench's report:\n%s", sec)
			}
			doc := mergeDoc("", map[string]string{"once": sec})
			summary := parseSections(doc)["summary"]
			checkText(t, "summary", summary, tc.want, tc.not)
		})
	}
}

// TestOnceMarkdownCycleFloors checks that the claim+complete target names
// the PING + PING floors when oncebench measured them, and never counts a
// floor as a baseline to compare with.
func TestOnceMarkdownCycleFloors(t *testing.T) {
	const cycles = `"cycles":[
		{"client":"go-redis","system":"oncekv: ONCE","oncekv":true,"cycles_per_s":10000},
		{"client":"go-redis","system":"redis: fast","cycles_per_s":16000},
		{"client":"go-redis","system":"redis: slow","cycles_per_s":8000},
		{"client":"go-redis","system":"oncekv: PING + PING (floor)","oncekv":true,"floor":true,"cycles_per_s":22000},
		{"client":"go-redis","system":"redis: PING + PING (floor)","floor":true,"cycles_per_s":25000}]`
	for _, tc := range []struct {
		name, ratios string
		want, not    []string
	}{
		{
			name:   "floors",
			ratios: `{"client":"go-redis","oncekv_cycles_per_s":10000,"best_baseline":"redis: fast","baseline_cycles_per_s":16000,"ratio":0.625,"oncekv_floor_cycles_per_s":22000,"redis_floor_cycles_per_s":25000}`,
			want: []string{"| 0.62× against the fastest baseline, redis: fast (10,000 vs 16,000 cycles/s); 1.25× against redis: slow. " +
				"Floor, two PINGs a cycle: redis-server 25,000, oncekv 22,000 cycles/s; the target, 32,000 cycles/s, is 1.28× the floor of redis-server | no |"},
			not: []string{"against redis: PING", "against oncekv: PING"},
		},
		{
			name:   "no floors",
			ratios: `{"client":"go-redis","oncekv_cycles_per_s":10000,"best_baseline":"redis: fast","baseline_cycles_per_s":16000,"ratio":0.625}`,
			want:   []string{"| 0.62× against the fastest baseline, redis: fast (10,000 vs 16,000 cycles/s); 1.25× against redis: slow | no |"},
			not:    []string{"Floor", "against redis: PING"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum onceSummary
			if err := json.Unmarshal([]byte(`{"clients":50,`+cycles+`,"ratios":[`+tc.ratios+`]}`), &sum); err != nil {
				t.Fatal(err)
			}
			sec := onceMarkdown(sectionHead{title: "ONCE", runLine: "run", command: "oncebench"}, "### Claim+complete\n\ntable\n", sum)
			summary := parseSections(mergeDoc("", map[string]string{"once": sec}))["summary"]
			checkText(t, "summary", summary, tc.want, tc.not)
		})
	}
}

// checkText fails t unless text (named what) holds every string of want
// and none of not.
func checkText(t testing.TB, what, text string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
	for _, n := range not {
		if strings.Contains(text, n) {
			t.Errorf("%s has %q:\n%s", what, n, text)
		}
	}
}
