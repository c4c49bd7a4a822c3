package integration

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A connection's pipeline keeps the keyspace lock across its commands and
// counts its commands locally until its replies go out (commands/local.go).
// These tests hold the server to what that must not change: every client
// sees the counts of a command whose reply it has, INFO sees the commands
// before it in its own pipeline, and no pipeline keeps others out while it
// waits: for its client, for a blocked command, for another connection.

// sendPipeline sends cmds in one write on c and reads one reply per command.
func sendPipeline(tb testing.TB, c *RawConn, cmds ...[]string) []*Frame {
	tb.Helper()
	var out []byte
	for _, args := range cmds {
		out = append(out, EncodeCommand(args...)...)
	}
	c.Send(out)
	frames := make([]*Frame, len(cmds))
	for i := range cmds {
		frames[i] = c.ReadFrame()
	}
	return frames
}

// infoInt reads field's integer from an INFO reply (0 if absent).
func infoInt(tb testing.TB, info, field string) int64 {
	tb.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:(\d+)\r?$`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// cmdCalls reads calls= of cmdstat_<name> from INFO commandstats.
func cmdCalls(info, name string) int64 {
	m := regexp.MustCompile(`(?m)^cmdstat_` + name + `:calls=(\d+),`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// INFO counts the commands before it in its own pipeline, and another
// client counts a command once its reply has been sent, as with Redis,
// whose counters move as each command runs.
func TestPipelineCountsBeforeReplies(t *testing.T) {
	addr := onceServer(t)
	a, b := DialRaw(t, addr), DialRaw(t, addr)
	before := string(b.ReadFrameAfterDo(t, "INFO", "stats").Str)
	hits0, misses0 := infoInt(t, before, "keyspace_hits"), infoInt(t, before, "keyspace_misses")
	total0 := infoInt(t, before, "total_commands_processed")

	r := sendPipeline(t, a,
		[]string{"SET", "k", "v"}, []string{"GET", "k"}, []string{"GET", "nope"}, []string{"INCR", "n"},
		[]string{"INFO", "stats"}, []string{"GET", "k"}, []string{"INFO", "commandstats"})
	if r[1].Str != "v" || !r[2].Null || r[3].Str != "1" {
		t.Fatalf("replies: %q %v %q", r[1].Str, r[2].Null, r[3].Str)
	}
	stats, cmds := r[4].Str, r[6].Str
	if h, m := infoInt(t, stats, "keyspace_hits")-hits0, infoInt(t, stats, "keyspace_misses")-misses0; h != 1 || m != 1 {
		t.Errorf("INFO after GET k, GET nope in its pipeline: %d hits, %d misses; want 1 and 1", h, m)
	}
	// b's INFO is one command, and a's four ran before its INFO.
	if n := infoInt(t, stats, "total_commands_processed") - total0; n != 5 {
		t.Errorf("INFO after four commands in its pipeline (and one INFO on another connection): %d more processed, want 5", n)
	}
	if g, s, i := cmdCalls(cmds, "get"), cmdCalls(cmds, "set"), cmdCalls(cmds, "incr"); g != 3 || s != 1 || i != 1 {
		t.Errorf("INFO commandstats after its pipeline's GET×3, SET, INCR: get %d, set %d, incr %d", g, s, i)
	}

	// A pipeline whose replies a client has is counted for every other.
	sendPipeline(t, a, []string{"GET", "k"}, []string{"GET", "k"}, []string{"GET", "nope"})
	after := string(b.ReadFrameAfterDo(t, "INFO", "stats").Str)
	if h := infoInt(t, after, "keyspace_hits") - hits0; h != 4 {
		t.Errorf("another client's INFO after 4 answered hits: %d", h)
	}
	if m := infoInt(t, after, "keyspace_misses") - misses0; m != 2 {
		t.Errorf("another client's INFO after 2 answered misses: %d", m)
	}
	cs := string(b.ReadFrameAfterDo(t, "INFO", "commandstats").Str)
	if g := cmdCalls(cs, "get"); g != 6 {
		t.Errorf("another client's INFO commandstats after 6 answered GETs: %d", g)
	}

	// CLIENT LIST shows a client's last command once it is answered,
	// and CLIENT INFO itself in its own pipeline.
	id := a.ReadFrameAfterDo(t, "CLIENT", "ID").Str
	sendPipeline(t, a, []string{"SET", "k", "w"}, []string{"INCR", "n"})
	if line := clientLine(t, b, id); !strings.Contains(line, " cmd=incr ") {
		t.Errorf("CLIENT LIST after a pipeline that ended with INCR: %s", line)
	}
	r = sendPipeline(t, a, []string{"GET", "k"}, []string{"CLIENT", "INFO"}, []string{"GET", "k"})
	if !strings.Contains(r[1].Str, " cmd=client|info ") {
		t.Errorf("CLIENT INFO after a GET in its pipeline: %s", r[1].Str)
	}
	if line := clientLine(t, b, id); !strings.Contains(line, " cmd=get ") {
		t.Errorf("CLIENT LIST after a pipeline that ended with GET: %s", line)
	}
}

// clientLine is the CLIENT LIST line, read on c, of the client whose ID
// is id.
func clientLine(tb testing.TB, c *RawConn, id string) string {
	tb.Helper()
	for _, line := range strings.Split(c.ReadFrameAfterDo(tb, "CLIENT", "LIST").Str, "\n") {
		if strings.HasPrefix(line, "id="+id+" ") {
			return line
		}
	}
	tb.Fatalf("client %s not in CLIENT LIST", id)
	return ""
}

// Many clients pipelining reads and writes of the same keys, longer than
// one taking of the lock serves, beside clients that send one command at
// a time: every pipeline is answered, INCR stays atomic (KV-1: each
// client's increments come back increasing, and the counter ends at their
// sum), and what a pipeline wrote it reads back.
func TestPipelinesShareTheKeyspace(t *testing.T) {
	addr := onceServer(t)
	const (
		pipers  = 6
		rounds  = 60
		perPipe = 40 // over the store's holdMax (16)
		singles = 4
		perOne  = 300
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, pipers+singles)
	for p := range pipers {
		c := DialRaw(t, addr)
		c.Timeout = 30 * time.Second
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := "own:" + strconv.Itoa(p)
			last := int64(0)
			for r := range rounds {
				var out []byte
				for i := range perPipe {
					switch i % 4 {
					case 0:
						out = append(out, EncodeCommand("INCR", "counter")...)
					case 1:
						out = append(out, EncodeCommand("SET", own, strconv.Itoa(r*perPipe+i))...)
					case 2:
						out = append(out, EncodeCommand("GET", own)...)
					default:
						out = append(out, EncodeCommand("GET", "shared:"+strconv.Itoa(i))...)
					}
				}
				if err := c.TrySend(out); err != nil {
					errs <- err
					return
				}
				for i := range perPipe {
					f, err := c.TryReadFrame()
					if err != nil {
						errs <- fmt.Errorf("client %d round %d reply %d: %w", p, r, i, err)
						return
					}
					switch i % 4 {
					case 0:
						n, _ := strconv.ParseInt(f.Str, 10, 64)
						if f.Type != ':' || n <= last {
							errs <- fmt.Errorf("client %d: INCR answered %c%q after %d", p, f.Type, f.Str, last)
							return
						}
						last = n
					case 2:
						if want := strconv.Itoa(r*perPipe + i - 1); f.Str != want {
							errs <- fmt.Errorf("client %d: GET of its own key read %q after it set %s", p, f.Str, want)
							return
						}
					}
				}
			}
		}()
	}
	for s := range singles {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perOne {
				key := "shared:" + strconv.Itoa(i%perPipe)
				if err := rdb.Set(ctx, key, s, 0).Err(); err != nil {
					errs <- err
					return
				}
				if err := rdb.Incr(ctx, "counter").Err(); err != nil {
					errs <- err
					return
				}
				if _, err := rdb.Get(ctx, key).Result(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	n, err := rdb.Get(ctx, "counter").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(pipers*rounds*perPipe/4 + singles*perOne); n != want {
		t.Fatalf("counter = %d after %d increments", n, want)
	}
}

// A blocked command at the end of a pipeline of reads and writes does not
// keep the keyspace from the client it waits for: the runner's COMPLETE
// goes through and wakes it. Again once the connection serves its
// requests on two goroutines (after its first blocking command).
func TestBlockedCommandAfterPipelineLetsOthersWrite(t *testing.T) {
	addr := onceServer(t)
	runner, waiter := DialRaw(t, addr), DialRaw(t, addr)
	runner.Timeout, waiter.Timeout = 20*time.Second, 20*time.Second
	for round := range 3 { // the first on the connection's own goroutine, then detached
		key := "job:" + strconv.Itoa(round)
		claim := runner.ReadFrameAfterDo(t, "ONCE.CLAIM", key, "LEASE", "60000")
		if len(claim.Elems) != 2 || claim.Elems[0].Str != "claimed" {
			t.Fatalf("claim: %+v", claim)
		}
		token := claim.Elems[1].Str
		var out []byte
		for _, args := range [][]string{{"SET", "a", key}, {"GET", "a"}, {"INCR", "n"}, {"GET", "a"}, {"ONCE.WAIT", key}} {
			out = append(out, EncodeCommand(args...)...)
		}
		waiter.Send(out)
		for i := range 4 {
			f := waiter.ReadFrame()
			if i == 1 && f.Str != key {
				t.Fatalf("GET a before the wait: %q", f.Str)
			}
		}
		// The waiter is blocked now, or about to be.
		done := make(chan *Frame, 1)
		go func() {
			f, err := waiter.TryReadFrame()
			if err != nil {
				t.Error(err)
			}
			done <- f
		}()
		time.Sleep(20 * time.Millisecond)
		if r := runner.ReadFrameAfterDo(t, "ONCE.COMPLETE", key, token, "answer-"+key); r.Type != '+' {
			t.Fatalf("complete: %c%q", r.Type, r.Str)
		}
		if r := runner.ReadFrameAfterDo(t, "SET", "b", key); r.Type != '+' {
			t.Fatalf("SET while the other connection waits: %c%q", r.Type, r.Str)
		}
		select {
		case f := <-done:
			if f == nil || len(f.Elems) != 2 || f.Elems[0].Str != "done" || !bytes.Equal([]byte(f.Elems[1].Str), []byte("answer-"+key)) {
				t.Fatalf("ONCE.WAIT answered %+v", f)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the waiter was never woken")
		}
	}
	if s := strings.TrimSpace(runner.ReadFrameAfterDo(t, "GET", "n").Str); s != "3" {
		t.Fatalf("n = %q after 3 pipelined INCRs", s)
	}
}

// INFO queued in MULTI runs inside EXEC's transaction, which holds the
// keyspace lock: its keyspace and once sections read the store through
// that transaction. They took the lock again and hung the connection,
// then every other one (the server never stalls because of one client).
func TestInfoInsideExec(t *testing.T) {
	addr := onceServer(t)
	a, b := DialRaw(t, addr), DialRaw(t, addr)
	a.Timeout = 10 * time.Second
	b.Do("SET", "before", "1")
	r := sendPipeline(t, a, []string{"MULTI"}, []string{"SET", "k", "v"}, []string{"INFO"},
		[]string{"INFO", "keyspace"}, []string{"INFO", "once"}, []string{"INFO", "everything"}, []string{"EXEC"})
	exec := r[6]
	if exec.Type != '*' || len(exec.Elems) != 5 {
		t.Fatalf("EXEC: %c %q, %d replies", exec.Type, exec.Str, len(exec.Elems))
	}
	if !strings.Contains(exec.Elems[2].Str, "db0:keys=2,") {
		t.Errorf("INFO keyspace in EXEC, after its SET of a second key: %q", exec.Elems[2].Str)
	}
	if !strings.Contains(exec.Elems[3].Str, "running_keys:") {
		t.Errorf("INFO once in EXEC: %q", exec.Elems[3].Str)
	}
	for i, f := range exec.Elems[1:] {
		if !strings.Contains(f.Str, "# ") {
			t.Errorf("INFO %d in EXEC: %c %q", i+1, f.Type, f.Str)
		}
	}
	if got := b.ReadFrameAfterDo(t, "GET", "k").Str; got != "v" {
		t.Fatalf("another client's GET after the EXEC: %q", got)
	}
}
