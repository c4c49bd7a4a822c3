package main

// The markdown of each section, its targets and its chart.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
)

// thousands formats v rounded to an integer with thousands separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// count formats a number of keys: 1M, 10M, 20k, 1.5M.
func count(n int64) string {
	for _, u := range []struct {
		div  int64
		unit string
	}{{1_000_000_000, "G"}, {1_000_000, "M"}, {1_000, "k"}} {
		if n >= u.div {
			return trimFloat(float64(n)/float64(u.div)) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}

func ratio(v float64) string { return fmt.Sprintf("%.2f×", v) }

func ms(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// sectionHead is the common opening of a section.
type sectionHead struct {
	title, runLine, command string
}

func (s sectionHead) render(b *strings.Builder) {
	fmt.Fprintf(b, "## %s\n\n%s\n\nCommand: `%s`\n\n", s.title, s.runLine, s.command)
}

// throughputMarkdown renders the throughput section and its targets;
// chartRef is the chart's path relative to the markdown file.
func (h *harness) throughputMarkdown(head sectionHead, pols []policyResult, chartRef string) string {
	var b strings.Builder
	head.render(&b)
	if len(pols) > 0 {
		fmt.Fprintf(&b, "Both servers are started fresh for each fsync policy, each in its own temporary directory, on free 127.0.0.1 ports:\n\n")
		fmt.Fprintf(&b, "    %s\n    %s\n\n", pols[0].OursCmd, pols[0].RedisCmd)
		fmt.Fprintf(&b, "(with `--appendfsync always` for the other policy). Before the runs, keys `key:000000000000` … `%s` are set on every server "+
			"(3-byte values), so that every GET hits. Each cell is\n\n", keyName(int64(h.keyspace-1)))
		fmt.Fprintf(&b, "    redis-benchmark -h 127.0.0.1 -p <port> -c %d -n %d -r %d -t <test> [-d 256] [-P 16] --csv\n\n",
			h.clients, h.requests, h.keyspace)
		fmt.Fprintf(&b, "run against each server in turn, the order rotating from round to round (oncekv first in the first round, redis-server in the second), "+
			"%d round(s). Requests/s and latencies are the medians over the rounds; the ratio is the median of the ratios "+
			"oncekv/redis-server measured within each round.%s\n\n", h.rounds, h.pauseNote())
		var ceilingCmds, ceilingPols []string
		for _, pol := range pols {
			if pol.CeilingCmd != "" {
				ceilingCmds = append(ceilingCmds, "    "+pol.CeilingCmd)
				ceilingPols = append(ceilingPols, pol.Fsync)
			}
		}
		if len(ceilingCmds) > 0 {
			var syncs []string
			for _, p := range ceilingPols {
				switch p {
				case "everysec":
					syncs = append(syncs, "under everysec it fdatasyncs the log every second")
				case "always":
					syncs = append(syncs, "under always a connection runs the next fdatasync for every byte written so far, "+
						"or waits for the one running (group commit), until everything written before its replies is synced")
				}
			}
			fmt.Fprintf(&b, "Under appendfsync %s a third server takes its turn in every cell: `bench/ceiling`, a deliberately minimal Go server, "+
				"what any Go server reaches on this machine. It serves SET, GET and INCR from a map under one mutex, a goroutine per connection, "+
				"and appends each batch of writes to a log with one write(2); %s. No storage engine, no other commands, no memory bound:\n\n%s\n\n"+
				"Its column, ceiling/redis, is measured like oncekv's ratio. Where it is below 1.0×, no Go server of this design reaches redis-server on that cell here; "+
				"where it is above and oncekv below, the difference is oncekv's engine.\n\n",
				strings.Join(ceilingPols, " and "), strings.Join(syncs, "; "), strings.Join(ceilingCmds, "\n"))
		}
	}
	var targets []target
	for _, pol := range pols {
		fmt.Fprintf(&b, "### appendfsync %s\n\n", pol.Fsync)
		withCeiling := pol.CeilingCmd != ""
		b.WriteString("| test | -P | oncekv req/s | redis req/s | oncekv/redis | oncekv p50 / p99 ms | redis p50 / p99 ms | ratio per round |")
		if withCeiling {
			b.WriteString(" Go ceiling req/s | ceiling/redis |")
		}
		b.WriteString("\n|---|--:|--:|--:|--:|--:|--:|---|")
		if withCeiling {
			b.WriteString("--:|--:|")
		}
		b.WriteString("\n")
		worst, worstCell, ok := math.Inf(1), "", 0
		cWorst, cWorstCell, cOK := math.Inf(1), "", 0
		for _, c := range pol.Cells {
			r := c.ratio()
			var per []string
			for i := range min(len(c.Ours), len(c.Redis)) {
				per = append(per, fmt.Sprintf("%.2f", c.Ours[i].RPS/c.Redis[i].RPS))
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | **%s** | %.3f / %.3f | %.3f / %.3f | %s |",
				c.Cell.Label, c.Cell.Pipeline,
				thousands(medianOf(c.Ours, func(s sample) float64 { return s.RPS })),
				thousands(medianOf(c.Redis, func(s sample) float64 { return s.RPS })),
				ratio(r),
				medianOf(c.Ours, func(s sample) float64 { return s.P50 }), medianOf(c.Ours, func(s sample) float64 { return s.P99 }),
				medianOf(c.Redis, func(s sample) float64 { return s.P50 }), medianOf(c.Redis, func(s sample) float64 { return s.P99 }),
				strings.Join(per, ", "))
			if withCeiling {
				cr := c.ceilingRatio()
				fmt.Fprintf(&b, " %s | %s |", thousands(medianOf(c.Ceiling, func(s sample) float64 { return s.RPS })), ratio(cr))
				if cr < cWorst {
					cWorst, cWorstCell = cr, c.Cell.name()
				}
				if cr >= 1 {
					cOK++
				}
			}
			b.WriteString("\n")
			if r < worst {
				worst, worstCell = r, c.Cell.name()
			}
			if r >= 1 {
				ok++
			}
		}
		b.WriteString("\n")
		if len(pol.Cells) > 0 {
			targets = append(targets, target{
				Section:  "throughput",
				Name:     fmt.Sprintf("appendfsync %s: oncekv/redis req/s ≥ 1.0× on every cell (median of %d round(s))", pol.Fsync, h.rounds),
				Measured: fmt.Sprintf("%d of %d cells ≥ 1.0×; lowest %s (%s)", ok, len(pol.Cells), ratio(worst), worstCell) + ceilingNote(withCeiling, cOK, len(pol.Cells), cWorst, cWorstCell),
				Met:      met(ok == len(pol.Cells) && h.rounds >= 2),
			})
		}
	}
	if chartRef != "" {
		fmt.Fprintf(&b, "![oncekv/redis-server requests/s per cell and fsync policy](%s)\n\n", chartRef)
	}
	if h.rounds < 2 {
		b.WriteString("Fewer than 2 rounds: the issue asks for the median of at least 2 alternations, so no target counts as met.\n\n")
	}
	b.WriteString(targetComments(targets))
	return b.String()
}

// ceilingNote is what the throughput target says of bench/ceiling's cells.
func ceilingNote(ran bool, ok, cells int, worst float64, worstCell string) string {
	if !ran {
		return ""
	}
	return fmt.Sprintf(". A minimal Go server with no storage engine (bench/ceiling), same run: %d of %d cells ≥ 1.0×, lowest %s (%s)", ok, cells, ratio(worst), worstCell)
}

// pauseNote says, when it is so, that the idle server was paused.
func (h *harness) pauseNote() string {
	if !h.pauseIdle {
		return ""
	}
	return " While one server is measured (or loaded), the others are paused with SIGSTOP, so that their background work " +
		"(Badger's compactions, Redis's AOF rewrites) takes no CPU from it."
}

// throughputChart is the chart of the ratios: a group per policy, a bar
// per cell, a line at 1.0×; then, for each policy bench/ceiling ran
// under, a group of its ratios.
func (h *harness) throughputChart(pols []policyResult) barChart {
	c := barChart{
		Title: "oncekv / redis-server requests per second",
		Subtitle: fmt.Sprintf("redis-benchmark -c %d -n %d -r %d, median of %d round(s); above the line, faster than redis-server",
			h.clients, h.requests, h.keyspace, h.rounds),
		YLabel: "req/s ÷ redis-server req/s", Format: ratio, RefLine: 1, RefLabel: "1.0× = redis-server",
	}
	for _, p := range pols {
		if p.CeilingCmd != "" {
			c.Subtitle += "; \"Go ceiling\": bench/ceiling, a minimal Go server, in oncekv's place"
			break
		}
	}
	tests := map[string]int{}
	depths := map[int]int{}
	for _, cl := range h.cells {
		c.Series = append(c.Series, cl.name())
		if _, ok := tests[cl.Label]; !ok {
			tests[cl.Label] = len(tests)
		}
		if _, ok := depths[cl.Pipeline]; !ok {
			depths[cl.Pipeline] = len(depths)
		}
		// A hue per test, a lighter shade for the pipelined run.
		c.Colors = append(c.Colors, palette[(2*tests[cl.Label]+min(depths[cl.Pipeline], 1))%len(palette)])
	}
	group := func(name string, p policyResult, ratio func(cellResult) float64) {
		c.Groups = append(c.Groups, name)
		vals := make([]float64, len(c.Series))
		for i := range vals {
			vals[i] = math.NaN()
			if i < len(p.Cells) {
				vals[i] = ratio(p.Cells[i])
			}
		}
		c.Values = append(c.Values, vals)
	}
	for _, p := range pols {
		group("appendfsync "+p.Fsync, p, cellResult.ratio)
	}
	for _, p := range pols {
		if p.CeilingCmd != "" {
			group("Go ceiling, "+p.Fsync, p, cellResult.ceilingRatio)
		}
	}
	return c
}

// onceMarkdown renders the ONCE section from oncebench's report and
// summary.
func onceMarkdown(head sectionHead, report string, sum onceSummary) string {
	var b strings.Builder
	head.render(&b)
	b.WriteString("`bench/oncebench` (also runnable alone: `go run ./bench/oncebench -h`) starts its own oncekv (the binary built for this run) " +
		"and redis-server, both `appendfsync everysec`, and reports:\n\n")
	b.WriteString(strings.TrimPrefix(strings.ReplaceAll("\n"+report, "\n### ", "\n### ONCE: "), "\n"))
	b.WriteString("\n")
	var targets []target
	for _, r := range sum.Ratios {
		if r.Client != "go-redis" {
			continue
		}
		measured := fmt.Sprintf("%s against the fastest baseline, %s (%s vs %s cycles/s)", ratio(r.Ratio), r.BestBaseline, thousands(r.Oncekv), thousands(r.Baseline))
		for _, c := range sum.Cycles {
			if c.Client == r.Client && !c.Oncekv && !c.Floor && c.System != r.BestBaseline && c.Median > 0 {
				measured += fmt.Sprintf("; %s against %s", ratio(r.Oncekv/c.Median), c.System)
			}
		}
		if r.RedisFloor > 0 {
			measured += fmt.Sprintf(". Floor, two PINGs a cycle: redis-server %s, oncekv %s cycles/s; the target, %s cycles/s, is %s the floor of redis-server",
				thousands(r.RedisFloor), thousands(r.OncekvFloor), thousands(2*r.Baseline), ratio(2*r.Baseline/r.RedisFloor))
		}
		targets = append(targets, target{
			Section:  "once",
			Name:     fmt.Sprintf("ONCE claim+complete, distinct keys, %d clients: ≥ 2× the go-redis + Lua baseline on redis-server (the fastest of its variants counts)", sum.Clients),
			Measured: measured,
			Met:      met(r.Ratio >= 2),
		})
	}
	found := false
	for _, w := range sum.Wakeups {
		if w.Waiters == 1000 {
			found = true
			measured := fmt.Sprintf("p99 %s, p50 %s over %d wake-ups", usStr(w.OnceP99us), usStr(w.OnceP50us), w.Samples)
			if w.PublishP99us > 0 {
				measured += fmt.Sprintf("; redis-server reference, one PUBLISH to %d subscribers: p99 %s, p50 %s", w.Waiters, usStr(w.PublishP99us), usStr(w.PublishP50us))
			}
			if w.BlpopP99us > 0 {
				measured += fmt.Sprintf("; one RPUSH to %d clients in BLPOP: p99 %s, p50 %s", w.Waiters, usStr(w.BlpopP99us), usStr(w.BlpopP50us))
			}
			if w.PollP99us > 0 {
				measured += fmt.Sprintf(" (GET polling every %s: p99 %s)", w.PollPeriod, usStr(w.PollP99us))
			}
			if w.LoopbackP99us > 0 {
				measured += fmt.Sprintf("; floor with no server, one write to each of %d loopback connections: p99 %s, p50 %s", w.Waiters, usStr(w.LoopbackP99us), usStr(w.LoopbackP50us))
			}
			if w.GoroutinesP99us > 0 {
				measured += fmt.Sprintf("; floor with no network, %d goroutines woken by closing one channel: p99 %s, p50 %s", w.Waiters, usStr(w.GoroutinesP99us), usStr(w.GoroutinesP50us))
			}
			if w.OnceExpiredKeys > 0 {
				measured += fmt.Sprintf("; oncekv expired %d keys meanwhile (the cycle part's answers)", w.OnceExpiredKeys)
			}
			targets = append(targets, target{
				Section:  "once",
				Name:     "ONCE waiter wake-up p99 < 1 ms with 1000 waiters",
				Measured: measured,
				Met:      met(w.OnceP99us < 1000),
			})
		}
	}
	if !found {
		targets = append(targets, target{Section: "once", Name: "ONCE waiter wake-up p99 < 1 ms with 1000 waiters", Measured: "not measured (-waiters has no 1000)", Met: met(false)})
	}
	b.WriteString(targetComments(targets))
	return b.String()
}

func usStr(v float64) string {
	if v < 1000 {
		return fmt.Sprintf("%.0f µs", v)
	}
	return fmt.Sprintf("%.2f ms", v/1000)
}

// memoryMarkdown renders the memory section and its targets.
func (h *harness) memoryMarkdown(head sectionHead, m memResult, chartRef string) string {
	var b strings.Builder
	head.render(&b)
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("Both servers are started fresh, each in its own temporary directory, with `appendfsync %s`:\n\n    %s\n    %s\n\n", m.Fsync, m.OursCmd, m.RedisCmd)
	p("Keys are `key:` and a 12-digit number (16 bytes: the names `redis-benchmark -r N` reads), values %d bytes of incompressible printable "+
		"characters (oncekv can compress its tables, with `table-compression`, off by default; Redis stores strings as they are). They are loaded with SET commands generated by the "+
		"harness and pipelined over %d connections (%d commands per write, %d writes in flight per connection; what `redis-cli --pipe` does, "+
		"with every reply checked), into oncekv first and then redis-server, never both at once.%s After each load both servers idle for %s, "+
		"%d stored values are checked with GET and DBSIZE is read; then RSS (VmRSS) and peak RSS (VmHWM) are read from "+
		"/proc/<pid>/status; oncekv's RSS is also split into its own memory (RssAnon) and the pages of files it maps (RssFile: "+
		"Badger's memory-mapped tables and logs, page cache that the kernel takes back under memory pressure).\n\n", m.ValueSize, h.loadConns, loadChunk, loadWindow, h.pauseNote(), h.settle, 200)
	if len(m.CacheConfig) > 0 {
		p("oncekv's memory directives in this run: `%s` (caches: %s in all).\n\n", strings.Join(m.CacheConfig, "`, `"), mib(m.CacheBytes))
	}

	p("### Idle: a fresh, empty server\n\n| server | RSS | peak RSS |\n|---|--:|--:|\n")
	p("| oncekv | %s | %s |\n| redis-server | %s | %s |\n\n", mib(m.IdleOurs.RSS), mib(m.IdleOurs.HWM), mib(m.IdleRedis.RSS), mib(m.IdleRedis.HWM))

	p("### RSS with the keys loaded\n\n")
	p("| keys | oncekv RSS | oncekv anon / file-mapped | oncekv peak | redis RSS | redis peak | oncekv/redis RSS | redis used_memory | data on disk oncekv / redis | load keys/s oncekv / redis | DBSIZE oncekv / redis |\n")
	p("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range m.Sizes {
		p("| %s | %s | %s / %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %d / %d |\n", count(s.Keys),
			mib(s.Ours.RSS), mib(s.Ours.Anon), mib(s.Ours.File), mib(s.Ours.HWM), mib(s.Redis.RSS), mib(s.Redis.HWM),
			ratio(float64(s.Ours.RSS)/float64(s.Redis.RSS)), s.RedisUsedMemory,
			mib(s.OursDisk), mib(s.RedisDisk), thousands(s.LoadOurs.rate()), thousands(s.LoadRedis.rate()), s.OursDBSize, s.RedisDBSize)
	}
	p("\n")

	p("### GETs over the whole keyspace\n\n")
	p("`redis-benchmark -h 127.0.0.1 -p <port> -c %d -n %d -r <keys> -t get [-P 16] --csv` right after each load (oncekv, then redis-server): "+
		"every GET reads one of the loaded keys at random, so with more data than oncekv's cache most reads miss it.\n\n", h.clients, h.memGets)
	p("| keys | data (keys + values) | -P | oncekv req/s | redis req/s | oncekv/redis | oncekv p50 / p99 ms | redis p50 / p99 ms |\n")
	p("|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range m.Sizes {
		for _, g := range s.Gets {
			p("| %s | %s | %d | %s | %s | %s | %.3f / %.3f | %.3f / %.3f |\n", count(s.Keys), mib(s.Keys*int64(16+m.ValueSize)), g.Pipeline,
				thousands(g.Ours.RPS), thousands(g.Redis.RPS), ratio(g.Ours.RPS/g.Redis.RPS), g.Ours.P50, g.Ours.P99, g.Redis.P50, g.Redis.P99)
		}
	}
	p("\n")

	if r := m.Restart; r != nil {
		sig := "SIGTERM (a clean shutdown)"
		if r.Signal == "kill" {
			sig = "SIGKILL (a crash)"
		}
		p("### Restart with %s keys\n\n", count(r.Keys))
		p("Both servers are stopped with %s, then each is started alone on its data (redis-server with `appendonly yes`, so it "+
			"replays its AOF). From the moment the process is started, a client dials every millisecond and sends `GET %s` "+
			"(a key loaded in the middle) until it answers the stored value (Redis answers `-LOADING` meanwhile). Then RSS is read and "+
			"`redis-benchmark … -r %d -t get` runs at once, on a cold cache.\n\n", sig, keyName(r.Keys/2), r.Keys)
		p("| server | stop took | accepting after | first reply after | **first GET answered after** | RSS then | GET req/s right after |\n")
		p("|---|--:|--:|--:|--:|--:|--:|\n")
		for _, s := range []struct {
			name string
			r    startResult
		}{{"oncekv", r.Ours}, {"redis-server", r.Redis}} {
			p("| %s | %s | %s | %s | **%s** | %s | %s |\n", s.name, ms(s.r.Stop), ms(s.r.Listen), ms(s.r.FirstReply), ms(s.r.FirstGet),
				mib(s.r.Mem.RSS), thousands(s.r.ColdGet.RPS))
		}
		p("\nredis-server's AOF at the restart: %s; `aof-use-rdb-preamble %s`; %s AOF rewrite(s) during the load. "+
			"Redis 7 keeps a multi-part AOF (`appendonlydir/`: a base file, incremental files, a manifest). ", strings.Join(r.RedisAOF, ", "), r.RDBPreamble, r.AOFRewrites)
		switch {
		case !r.RewriteAuto:
			p("Automatic rewrites were off (`--auto-aof-rewrite-percentage 0`), so the restart replays every command of the incremental file.\n\n")
		case r.AOFRewrites == "0":
			p("No rewrite happened, so the restart replays every command of the incremental file.\n\n")
		default:
			p("With its defaults Redis rewrites the AOF each time it doubles past 64 MB, writing the base as an RDB snapshot when the " +
				"preamble is on: most of what the restart \"replays\" is then an RDB load, and only the commands after the last " +
				"rewrite are replayed one by one (`-- -redis-aof-rewrite=false` turns the rewrites off for a command-only replay).\n\n")
		}
	}
	if chartRef != "" {
		p("![RSS of oncekv and redis-server](%s)\n\n", chartRef)
	}

	var targets []target
	if len(m.Sizes) > 0 {
		small, large := m.Sizes[0], m.Sizes[len(m.Sizes)-1]
		targets = append(targets, target{
			Section: "memory", Name: fmt.Sprintf("RSS with %s keys ≤ redis-server's RSS with %s keys", count(small.Keys), count(small.Keys)),
			Measured: fmt.Sprintf("%s vs %s (%s)", mib(small.Ours.RSS), mib(small.Redis.RSS), ratio(float64(small.Ours.RSS)/float64(small.Redis.RSS))),
			Met:      met(small.Ours.RSS <= small.Redis.RSS),
		})
		if len(m.Sizes) > 1 {
			targets = append(targets, target{
				Section: "memory", Name: fmt.Sprintf("RSS with %s keys ≤ redis-server's RSS with %s keys", count(large.Keys), count(small.Keys)),
				Measured: fmt.Sprintf("%s vs %s (%s)", mib(large.Ours.RSS), mib(small.Redis.RSS), ratio(float64(large.Ours.RSS)/float64(small.Redis.RSS))),
				Met:      met(large.Ours.RSS <= small.Redis.RSS),
			}, target{
				Section: "memory", Name: fmt.Sprintf("RSS with %s keys ≤ 0.5× redis-server's RSS with %s keys", count(large.Keys), count(large.Keys)),
				Measured: fmt.Sprintf("%s vs %s (%s)", mib(large.Ours.RSS), mib(large.Redis.RSS), ratio(float64(large.Ours.RSS)/float64(large.Redis.RSS))),
				Met:      met(2*large.Ours.RSS <= large.Redis.RSS),
			})
		}
		var gets []string
		for _, g := range large.Gets {
			gets = append(gets, fmt.Sprintf("-P %d: %s req/s (redis %s, %s)", g.Pipeline, thousands(g.Ours.RPS), thousands(g.Redis.RPS), ratio(g.Ours.RPS/g.Redis.RPS)))
		}
		data := large.Keys * int64(16+m.ValueSize)
		larger := "larger than"
		if data <= m.CacheBytes {
			larger = "NOT larger than"
		}
		targets = append(targets, target{
			Section: "memory", Name: fmt.Sprintf("Keyspace %s the cache (%s keys, %s of data; oncekv's caches: %s): GET rate", larger, count(large.Keys), mib(data), mib(m.CacheBytes)),
			Measured: strings.Join(gets, "; "),
		})
	}
	if r := m.Restart; r != nil {
		targets = append(targets, target{
			Section: "memory", Name: fmt.Sprintf("Restart with %s keys: first GET answered < 1 s", count(r.Keys)),
			Measured: fmt.Sprintf("%s (redis-server replaying its AOF: %s)", ms(r.Ours.FirstGet), ms(r.Redis.FirstGet)),
			Met:      met(r.Ours.FirstGet < time.Second),
		})
	}
	targets = append(targets, target{
		Section: "memory", Name: "Idle: RSS of a fresh server",
		Measured: fmt.Sprintf("%s (redis-server %s)", mib(m.IdleOurs.RSS), mib(m.IdleRedis.RSS)),
	})
	b.WriteString(targetComments(targets))
	return b.String()
}

// memoryChart shows both servers' RSS idle, at each size and after the
// restart.
func memoryChart(m memResult) barChart {
	c := barChart{
		Title:    "Resident memory (VmRSS)",
		Subtitle: fmt.Sprintf("16-byte keys, %d-byte values, appendfsync %s", m.ValueSize, m.Fsync),
		YLabel:   "MiB", Series: []string{"oncekv", "redis-server"}, Colors: []string{"#4e79a7", "#e15759"},
		Format: func(v float64) string { return thousands(v) },
	}
	add := func(name string, a, b benchkit.Mem) {
		c.Groups = append(c.Groups, name)
		c.Values = append(c.Values, []float64{float64(a.RSS) / (1 << 20), float64(b.RSS) / (1 << 20)})
	}
	add("idle", m.IdleOurs, m.IdleRedis)
	for _, s := range m.Sizes {
		add(count(s.Keys)+" keys", s.Ours, s.Redis)
	}
	if r := m.Restart; r != nil {
		add("restarted, "+count(r.Keys), r.Ours.Mem, r.Redis.Mem)
	}
	return c
}
