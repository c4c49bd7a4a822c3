package main

// The memory section: the RSS of a fresh server; the RSS after loading
// 1M and 10M keys (16-byte keys, 100-byte values); GETs over a keyspace
// larger than oncekv's configured cache; and the time a restarted server
// takes to answer its first GET, with redis-server replaying its AOF as
// the reference.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
)

// getResult is one GET benchmark over a loaded keyspace.
type getResult struct {
	Pipeline    int
	Ours, Redis sample
}

// sizeResult is the state of both servers with Keys keys loaded.
type sizeResult struct {
	Keys                int64
	LoadOurs, LoadRedis loadStats
	Ours, Redis         benchkit.Mem
	OursDisk, RedisDisk int64
	RedisUsedMemory     string // INFO memory used_memory_human
	OursDBSize          int64  // DBSIZE after the load (-1: no answer)
	RedisDBSize         int64
	Gets                []getResult
}

// startResult is how a restarted server came back.
type startResult struct {
	Listen     time.Duration // process start → first connection accepted
	FirstReply time.Duration // → first reply of any kind (Redis: -LOADING)
	FirstGet   time.Duration // → first GET answered with the stored value
	Mem        benchkit.Mem  // right after the first GET
	Stop       time.Duration // how long the stop before it took
	ColdGet    sample        // GETs over the whole keyspace right after
}

// restartResult is the restart of both servers with Keys keys.
type restartResult struct {
	Keys        int64
	Signal      string
	Ours, Redis startResult
	RedisAOF    []string // the appendonlydir files, "name (size)"
	RDBPreamble string   // CONFIG GET aof-use-rdb-preamble
	AOFRewrites string   // INFO persistence aof_rewrites
	RewriteAuto bool     // auto-aof-rewrite-percentage is not 0
}

// memResult is the memory section's result.
type memResult struct {
	Fsync               string
	IdleOurs, IdleRedis benchkit.Mem
	Sizes               []sizeResult
	Restart             *restartResult
	OursCmd, RedisCmd   string
	CacheConfig         []string // oncekv's memory directives, "name value"
	CacheBytes          int64    // the sum of the *cache* ones
	ValueSize           int
	Started, Ended      time.Time
}

// runMemory runs the memory section on a fresh pair of servers.
func (h *harness) runMemory() (memResult, error) {
	res := memResult{Fsync: h.memFsync, ValueSize: h.valueSize, Started: time.Now()}
	dir := filepath.Join(h.work, "memory")
	defer os.RemoveAll(dir)
	redisDir, onceDir := filepath.Join(dir, "redis"), filepath.Join(dir, "oncekv")
	redis, err := benchkit.StartRedis(h.redisBin, redisDir, h.memFsync, h.redisExtra...)
	if err != nil {
		return res, err
	}
	defer func() { redis.Stop() }()
	ours, err := benchkit.StartOncekv(h.onceBin, onceDir, h.memFsync)
	if err != nil {
		return res, err
	}
	defer func() { ours.Stop() }()
	res.OursCmd, res.RedisCmd = genericCmd(ours, dir), genericCmd(redis, dir)
	res.CacheConfig, res.CacheBytes = cacheConfig(ours.Addr)

	time.Sleep(h.settle)
	if res.IdleOurs, err = benchkit.ReadMem(ours.PID()); err != nil {
		return res, err
	}
	if res.IdleRedis, err = benchkit.ReadMem(redis.PID()); err != nil {
		return res, err
	}
	h.logf("memory: idle RSS oncekv %s, redis %s", mib(res.IdleOurs.RSS), mib(res.IdleRedis.RSS))

	var prev int64
	for _, n := range h.memKeys {
		sr := sizeResult{Keys: n}
		if err := h.alone(ours, []*benchkit.Proc{redis}, func() (err error) {
			sr.LoadOurs, err = load(ours.Addr, prev, n, h.valueSize, h.loadConns, "oncekv", h.log)
			return err
		}); err != nil {
			return res, err
		}
		h.logf("memory: loaded keys %d..%d into oncekv in %s (%.0f keys/s)", prev, n, sr.LoadOurs.elapsed.Round(time.Millisecond), sr.LoadOurs.rate())
		if err := h.alone(redis, []*benchkit.Proc{ours}, func() (err error) {
			sr.LoadRedis, err = load(redis.Addr, prev, n, h.valueSize, h.loadConns, "redis-server", h.log)
			return err
		}); err != nil {
			return res, err
		}
		h.logf("memory: loaded keys %d..%d into redis in %s (%.0f keys/s)", prev, n, sr.LoadRedis.elapsed.Round(time.Millisecond), sr.LoadRedis.rate())
		prev = n
		time.Sleep(h.settle)
		for _, p := range []*benchkit.Proc{ours, redis} {
			if err := verify(p.Addr, n, h.valueSize, 200); err != nil {
				return res, fmt.Errorf("%s after loading %d keys: %w", p.Name, n, err)
			}
		}
		sr.OursDBSize, sr.RedisDBSize = dbsize(ours.Addr), dbsize(redis.Addr)
		if sr.OursDBSize != n || sr.RedisDBSize != n {
			h.logf("memory: WARNING: %d distinct keys loaded, DBSIZE says %d on oncekv and %d on redis-server", n, sr.OursDBSize, sr.RedisDBSize)
		}
		if sr.Ours, err = benchkit.ReadMem(ours.PID()); err != nil {
			return res, err
		}
		if sr.Redis, err = benchkit.ReadMem(redis.PID()); err != nil {
			return res, err
		}
		sr.OursDisk, sr.RedisDisk = benchkit.DirSize(onceDir), benchkit.DirSize(redisDir)
		sr.RedisUsedMemory = benchkit.InfoField(redis.Addr, "memory", "used_memory_human")
		h.logf("memory: %d keys: RSS oncekv %s (peak %s), redis %s (peak %s)", n,
			mib(sr.Ours.RSS), mib(sr.Ours.HWM), mib(sr.Redis.RSS), mib(sr.Redis.HWM))
		for _, pl := range h.pipelines {
			g := getResult{Pipeline: pl}
			c := cell{Label: "GET", Test: "get", Pipeline: pl}
			if err := h.alone(ours, []*benchkit.Proc{redis}, func() (err error) {
				g.Ours, err = h.bench(ours, c, h.memGets, n)
				return err
			}); err != nil {
				return res, err
			}
			if err := h.alone(redis, []*benchkit.Proc{ours}, func() (err error) {
				g.Redis, err = h.bench(redis, c, h.memGets, n)
				return err
			}); err != nil {
				return res, err
			}
			h.logf("memory: %d keys: GET -P %d: oncekv %s req/s, redis %s req/s", n, pl, thousands(g.Ours.RPS), thousands(g.Redis.RPS))
			sr.Gets = append(sr.Gets, g)
		}
		res.Sizes = append(res.Sizes, sr)
	}

	if h.restart && prev > 0 {
		rr, err := h.restartBoth(ours, redis, onceDir, redisDir, prev)
		if err != nil {
			return res, err
		}
		res.Restart = rr
	}
	res.Ended = time.Now()
	return res, nil
}

// restartBoth stops both servers, then restarts each alone and measures
// how soon it answers a GET of a loaded key.
func (h *harness) restartBoth(ours, redis *benchkit.Proc, onceDir, redisDir string, n int64) (*restartResult, error) {
	rr := &restartResult{Keys: n, Signal: h.restartSignal}
	if err := waitAOFRewrite(redis.Addr, 10*time.Minute); err != nil {
		return nil, err
	}
	rr.RDBPreamble = configGet(redis.Addr, "aof-use-rdb-preamble")
	rr.RewriteAuto = configGet(redis.Addr, "auto-aof-rewrite-percentage") != "0"
	rr.AOFRewrites = benchkit.InfoField(redis.Addr, "persistence", "aof_rewrites")
	stop := func(p *benchkit.Proc) time.Duration {
		t := time.Now()
		if h.restartSignal == "kill" {
			p.Kill()
		} else {
			p.StopWithin(10 * time.Minute)
		}
		return time.Since(t)
	}
	rr.Ours.Stop, rr.Redis.Stop = stop(ours), stop(redis)
	rr.RedisAOF = listDir(filepath.Join(redisDir, "appendonlydir"))

	key := n / 2
	for _, s := range []struct {
		name string
		out  *startResult
		args func(port int) []string
		bin  string
		dir  string
	}{
		{"oncekv", &rr.Ours, func(port int) []string {
			return benchkit.OncekvArgs(port, filepath.Join(onceDir, "data"), h.memFsync)
		}, h.onceBin, onceDir},
		{"redis-server", &rr.Redis, func(port int) []string {
			return benchkit.RedisArgs(port, redisDir, h.memFsync, h.redisExtra...)
		}, h.redisBin, redisDir},
	} {
		port, err := benchkit.FreePort()
		if err != nil {
			return nil, err
		}
		p, err := benchkit.Spawn(s.name, s.bin, s.dir, port, s.args(port))
		if err != nil {
			return nil, err
		}
		err = firstGet(p, keyName(key), valueOf(key, h.valueSize), 10*time.Minute, s.out)
		if err == nil {
			s.out.Mem, err = benchkit.ReadMem(p.PID())
		}
		if err == nil {
			h.logf("memory: restart %s with %d keys: first GET after %s", s.name, n, s.out.FirstGet.Round(time.Millisecond))
			s.out.ColdGet, err = h.bench(p, cell{Label: "GET", Test: "get", Pipeline: 1}, h.memGets, n)
		}
		if err == nil {
			err = verify(p.Addr, n, h.valueSize, 200)
		}
		p.Stop()
		if err != nil {
			return nil, fmt.Errorf("restart %s: %w\n%s", s.name, err, p.LogTail())
		}
	}
	return rr, nil
}

// firstGet polls p (just spawned) with GET key until it answers want,
// and records when it first accepted, replied and answered.
func firstGet(p *benchkit.Proc, key, want string, timeout time.Duration, out *startResult) error {
	for {
		if p.Exited() {
			return fmt.Errorf("%s exited (%s)", p.Name, p.Ended())
		}
		if time.Since(p.Started) > timeout {
			return fmt.Errorf("%s: no answer to GET in %s", p.Name, timeout)
		}
		c, err := benchkit.DialTimeout(p.Addr, 100*time.Millisecond)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		if out.Listen == 0 {
			out.Listen = time.Since(p.Started)
		}
		for {
			if err = c.SetDeadline(p.Started.Add(timeout)); err == nil {
				err = c.Send("GET", key)
			}
			var r benchkit.Reply
			if err == nil {
				r, err = c.Read()
			}
			if err != nil {
				break // closed while starting: dial again
			}
			if out.FirstReply == 0 {
				out.FirstReply = time.Since(p.Started)
			}
			switch {
			case r.Kind == '$' && r.Str == want:
				out.FirstGet = time.Since(p.Started)
				c.Close()
				return nil
			case r.IsErr():
				time.Sleep(time.Millisecond) // -LOADING: try again
			default:
				c.Close()
				return fmt.Errorf("%s: GET %s: %v, want the stored value", p.Name, key, r)
			}
		}
		c.Close()
	}
}

// waitAOFRewrite waits until redis-server at addr runs no AOF rewrite and
// has none scheduled.
func waitAOFRewrite(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if benchkit.InfoField(addr, "persistence", "aof_rewrite_in_progress") == "0" &&
			benchkit.InfoField(addr, "persistence", "aof_rewrite_scheduled") == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s: AOF rewrite still running after %s", addr, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// configGet returns the value of CONFIG GET name, or "?".
func configGet(addr, name string) string {
	kv := configGetAll(addr, name)
	if len(kv) != 1 {
		return "?"
	}
	_, v, _ := strings.Cut(kv[0], " ")
	return v
}

// configGetAll returns CONFIG GET pattern as "name value" lines, sorted.
func configGetAll(addr, pattern string) []string {
	c, err := benchkit.Dial(addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	r, err := c.Do("CONFIG", "GET", pattern)
	if err != nil || r.Kind != '*' {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(r.Arr); i += 2 {
		out = append(out, r.Arr[i].Str+" "+r.Arr[i+1].Str)
	}
	slices.Sort(out)
	return out
}

// cacheConfig returns oncekv's directives that size its memory, and the
// sum of the sizes of its caches. The block cache counts only where
// tables are compressed: uncompressed tables are read without it.
func cacheConfig(addr string) ([]string, int64) {
	var out []string
	var cache int64
	all := configGetAll(addr, "*")
	compressed := false
	for _, kv := range all {
		if name, v, _ := strings.Cut(kv, " "); name == "table-compression" {
			compressed = v != "" && v != "none"
		}
	}
	for _, kv := range all {
		name, v, _ := strings.Cut(kv, " ")
		if strings.Contains(name, "cache") || strings.Contains(name, "memtable") || strings.HasPrefix(name, "maxmemory") || name == "memory-burst" {
			out = append(out, kv)
		}
		if name == "block-cache-size" && !compressed {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && strings.Contains(name, "cache") {
			cache += n
		}
	}
	return out, cache
}

// dbsize returns DBSIZE on addr, or -1.
func dbsize(addr string) int64 {
	c, err := benchkit.Dial(addr)
	if err != nil {
		return -1
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Minute)); err != nil {
		return -1
	}
	if err := c.Send("DBSIZE"); err != nil {
		return -1
	}
	r, err := c.Read()
	if err != nil || r.Kind != ':' {
		return -1
	}
	return r.N
}

// listDir returns "name (size)" for the files of dir.
func listDir(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			out = append(out, e.Name()+" ("+mib(info.Size())+")")
		}
	}
	return out
}

// mib formats bytes in MiB (KiB below 1 MiB).
func mib(b int64) string {
	if b < 1<<20 {
		return thousands(float64(b)/(1<<10)) + " KiB"
	}
	v := float64(b) / (1 << 20)
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + " MiB"
	}
	return thousands(v) + " MiB"
}
