package integration

// Scripting beyond the byte-for-byte scripts: a runaway script (-BUSY,
// SCRIPT KILL, UNKILLABLE, SHUTDOWN NOSAVE), atomicity under concurrent
// clients (KV-1), and durability of a script's writes across kill -9
// (KV-6).

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

const busyReply = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"

// TestScriptRunaway: a script that never ends does not stall the server.
// Past busy-reply-threshold other clients get -BUSY (set low here by
// CONFIG SET); SCRIPT KILL ends a script that has not written, its caller
// gets Redis's error, and the server serves again; a script that wrote
// is UNKILLABLE, and SHUTDOWN NOSAVE stops the server anyway.
func TestScriptRunaway(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t)
	admin := DialRaw(t, srv.Addr)
	expectReply(t, admin, "+OK\r\n", "CONFIG", "SET", "busy-reply-threshold", "100")
	expectReply(t, admin, "*2\r\n$14\r\nlua-time-limit\r\n$3\r\n100\r\n", "CONFIG", "GET", "lua-time-limit")

	for _, tc := range []struct {
		name string
		// other is what another client sends while the script runs,
		// and want its reply.
		other []string
		want  string
	}{
		{"read", []string{"GET", "k"}, busyReply},
		{"write", []string{"SET", "k", "v"}, busyReply},
		{"no-keys", []string{"PING"}, busyReply},
		{"eval", []string{"EVAL", "return 1", "0"}, busyReply},
		{"once", []string{"ONCE.CLAIM", "o"}, busyReply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "local n = 0 while true do n = n + 1 end"
			runner := DialRaw(t, srv.Addr)
			defer runner.Close()
			runner.Send(EncodeCommand("EVAL", body, "0"))
			time.Sleep(20 * time.Millisecond) // the script has started
			other := DialRaw(t, srv.Addr)
			defer other.Close()
			start := time.Now()
			expectReply(t, other, tc.want, tc.other...)
			if waited := time.Since(start); waited > 3*time.Second {
				t.Fatalf("-BUSY came after %v", waited)
			}
			expectReply(t, other, "+OK\r\n", "SCRIPT", "KILL")
			want := "-ERR Script killed by user with SCRIPT KILL... script: " + sha1Hex(body) + ", on @user_script:1.\r\n"
			if got := string(runner.ReadReply()); got != want {
				t.Fatalf("killed script's caller got %q, want %q", got, want)
			}
			expectReply(t, other, "-NOTBUSY No scripts in execution right now.\r\n", "SCRIPT", "KILL")
			expectReply(t, other, "$-1\r\n", "GET", "nosuch")
			expectReply(t, runner, ":1\r\n", "EVAL", "return 1", "0")
		})
	}

	// A script that ends before the threshold: another client waits for
	// it, and is served, not refused.
	t.Run("short-script-is-waited-for", func(t *testing.T) {
		expectReply(t, admin, "+OK\r\n", "CONFIG", "SET", "lua-time-limit", "5000")
		defer expectReply(t, admin, "+OK\r\n", "CONFIG", "SET", "lua-time-limit", "100")
		runner := DialRaw(t, srv.Addr)
		defer runner.Close()
		spin := `local s = redis.call("TIME") repeat local n = redis.call("TIME") until (n[1]-s[1])*1000000 + (n[2]-s[2]) > 300000 return redis.call("SET", KEYS[1], "done")`
		runner.Send(EncodeCommand("EVAL", spin, "1", "short"))
		time.Sleep(30 * time.Millisecond)
		expectReply(t, admin, "$4\r\ndone\r\n", "GET", "short")
		if got := string(runner.ReadReply()); got != "+OK\r\n" {
			t.Fatalf("script: %q", got)
		}
	})

	// A script that wrote cannot be killed; SHUTDOWN NOSAVE stops it
	// and the server.
	t.Run("unkillable-then-shutdown", func(t *testing.T) {
		runner := DialRaw(t, srv.Addr)
		defer runner.Close()
		runner.Send(EncodeCommand("EVAL", `redis.call("SET", KEYS[1], "1") while true do end`, "1", "w"))
		time.Sleep(150 * time.Millisecond)
		other := DialRaw(t, srv.Addr)
		expectReply(t, other, busyReply, "GET", "w")
		expectReply(t, other, "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n", "SCRIPT", "KILL")
		other.Send(EncodeCommand("SHUTDOWN", "NOSAVE"))
		deadline := time.Now().Add(10 * time.Second)
		for !srv.Exited() {
			if time.Now().After(deadline) {
				t.Fatalf("the server did not exit after SHUTDOWN NOSAVE")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestScriptAtomicUnderConcurrency (KV-1): many goroutines on several
// connections run an INCR-if-below-limit script and a lock
// acquire/release pair of scripts. A script runs whole, with no command
// of another client in between: the counter never exceeds the limit and
// exactly limit calls succeed, and the lock is held by one at a time.
func TestScriptAtomicUnderConcurrency(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t)
	const (
		workers = 8
		rounds  = 150
		limit   = 500
	)
	incrBelow := `local v = tonumber(redis.call("GET", KEYS[1]) or "0") if v >= tonumber(ARGV[1]) then return -1 end return redis.call("INCR", KEYS[1])`
	acquire := `if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end redis.call("SET", KEYS[1], ARGV[1]) return 1`
	release := `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
	var (
		wg        sync.WaitGroup
		granted   atomic.Int64
		holders   atomic.Int32
		maxSeen   atomic.Int64
		problems  = make(chan string, workers)
		lockCount atomic.Int64
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := TryDialRaw(t, srv.Addr)
			if err != nil {
				problems <- err.Error()
				return
			}
			defer c.Close()
			token := "w" + strconv.Itoa(w)
			for range rounds {
				r, err := c.TryDo("EVAL", incrBelow, "1", "counter", strconv.Itoa(limit))
				if err != nil {
					problems <- err.Error()
					return
				}
				n, _ := strconv.ParseInt(strings.TrimSpace(string(r[1:])), 10, 64)
				if n > limit {
					problems <- fmt.Sprintf("counter reached %d > limit %d", n, limit)
					return
				}
				if n > 0 {
					granted.Add(1)
					for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
					}
				}
				r, err = c.TryDo("EVAL", acquire, "1", "lock", token)
				if err != nil {
					problems <- err.Error()
					return
				}
				if string(r) != ":1\r\n" {
					continue
				}
				if holders.Add(1) != 1 {
					problems <- "two holders of the lock at once"
				}
				lockCount.Add(1)
				holders.Add(-1)
				r, err = c.TryDo("EVAL", release, "1", "lock", token)
				if err != nil || string(r) != ":1\r\n" {
					problems <- fmt.Sprintf("release by its holder: %q %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	c := DialRaw(t, srv.Addr)
	expectReply(t, c, "$3\r\n500\r\n", "GET", "counter")
	if granted.Load() != limit || maxSeen.Load() != limit {
		t.Fatalf("granted %d increments (highest %d), want exactly %d", granted.Load(), maxSeen.Load(), limit)
	}
	if lockCount.Load() == 0 {
		t.Fatalf("no worker ever took the lock")
	}
	expectReply(t, c, ":0\r\n", "EXISTS", "lock")
}

// TestScriptWritesSurviveKill (KV-6): under appendfsync always, the
// writes of a script whose reply was received survive kill -9, all of
// them (a script is acknowledged once its writes are durable).
func TestScriptWritesSurviveKill(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t, "--appendfsync", "always")
	body := `for i = 1, 5 do redis.call("SET", KEYS[1] .. ":" .. i, ARGV[1]) end return redis.call("INCR", KEYS[1] .. ":n")`
	const clients = 4
	acked := make([]int, clients)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := TryDialRaw(t, srv.Addr)
			if err != nil {
				return
			}
			defer c.Close()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r, err := c.TryDo("EVAL", body, "1", "c"+strconv.Itoa(w), strconv.Itoa(i))
				if err != nil {
					return // killed
				}
				if string(r) != fmt.Sprintf(":%d\r\n", i) {
					t.Errorf("client %d, script %d: %q", w, i, r)
					return
				}
				acked[w] = i
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	srv.Kill(t)
	close(stop)
	wg.Wait()
	srv = srv.Restart(t)
	c := DialRaw(t, srv.Addr)
	for w := range clients {
		if acked[w] == 0 {
			t.Fatalf("client %d had no script acknowledged before the kill", w)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(c.Do("GET", fmt.Sprintf("c%d:n", w))), "\r\n", 3)[1]))
		if n < acked[w] {
			t.Fatalf("client %d: %d scripts acknowledged, %d survived", w, acked[w], n)
		}
		// The five SETs of the last script that survived are all there:
		// a script is written whole.
		for i := 1; i <= 5; i++ {
			want := fmt.Sprintf("$%d\r\n%d\r\n", len(strconv.Itoa(n)), n)
			expectReply(t, c, want, "GET", fmt.Sprintf("c%d:%d", w, i))
		}
	}
}

// TestScriptOnceCommands: ONCE commands run from a script as inside
// EXEC: a CLAIM … WAIT or ONCE.WAIT on a running key answers at once
// (["running", ms]) rather than blocking the script; a claim and its
// COMPLETE in one script keep the answer (KV-8).
func TestScriptOnceCommands(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t)
	c := DialRaw(t, srv.Addr)
	for _, tc := range []struct {
		body string
		want string // the reply's start
	}{
		{"return redis.call('ONCE.CLAIM', KEYS[1])", "*2\r\n$7\r\nclaimed\r\n:"},
		{"return redis.call('ONCE.CLAIM', KEYS[1], 'WAIT', '5000')", "*2\r\n$7\r\nrunning\r\n:"},
		{"return redis.call('ONCE.WAIT', KEYS[1])", "*2\r\n$7\r\nrunning\r\n:"},
		{"return redis.call('GET', KEYS[1])", "-WRONGTYPE Operation against a key holding the wrong kind of value script: "},
		{"local r = redis.call('ONCE.CLAIM', KEYS[2]) redis.call('ONCE.COMPLETE', KEYS[2], r[2], 'answer') return redis.call('ONCE.CLAIM', KEYS[2])", "*2\r\n$4\r\ndone\r\n$6\r\nanswer\r\n"},
		{"return redis.call('ONCE.STATUS', KEYS[2])[2]", "$4\r\ndone\r\n"},
	} {
		start := time.Now()
		got := string(c.Do("EVAL", tc.body, "2", "o1", "o2"))
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %q, want it to start %q", tc.body, got, tc.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: answered after %v: it waited", tc.body, d)
		}
	}
}
