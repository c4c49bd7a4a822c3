package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostileFor is how long the hostile clients run.
const hostileFor = 5 * time.Second

// maxLatency bounds a well-behaved client's round trip meanwhile: generous
// for a loaded 2-core machine, far below what a stalled server shows.
const maxLatency = time.Second

// TestHostileClients (KV-5): while clients send malformed RESP, inline
// floods, binary garbage and half-sent requests, trickle a byte per 100 ms,
// pipeline without reading, or announce huge requests, a well-behaved
// client keeps being answered promptly, the server's memory stays bounded,
// and it is alive at the end.
func TestHostileClients(t *testing.T) {
	o := StartOncekv(t, "--client-query-buffer-limit", "8mb")
	addr := o.Addr
	setup := DialRaw(t, addr)
	bigValue := strings.Repeat("B", 1<<20)
	if reply := setup.Do("SET", "big", bigValue); string(reply) != "+OK\r\n" {
		t.Fatalf("SET big: %q", reply)
	}
	rss0 := rssKiB(o.Cmd.Process.Pid)

	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	var errs sync.Map // kind → first unexpected outcome
	note := func(kind string, format string, args ...any) {
		errs.LoadOrStore(kind, fmt.Sprintf(format, args...))
	}
	dial := func() net.Conn {
		nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
		if err != nil {
			if !stopped() {
				note("dial", "%v", err)
			}
			return nil
		}
		return nc
	}
	var counts struct{ malformed, garbage, half, loris, flood atomic.Int64 }
	loop := func(kind string, n int, fn func(rng *rand.Rand)) {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(i) + int64(len(kind))))
				for !stopped() {
					fn(rng)
				}
			}()
		}
	}

	// Malformed requests: each is answered with Redis's protocol error,
	// then the connection is closed.
	malformed := []string{"*1\r\n$600000000\r\n", "*abc\r\n", "*1\r\n$-5\r\n", "*1\r\n:4\r\n", "PING \"a\r\n",
		"*2147483648\r\n", "*" + strings.Repeat("9", 70000), strings.Repeat("A", 70000), "*1\r\n$04\r\nPING\r\n"}
	loop("malformed", 2, func(rng *rand.Rand) {
		nc := dial()
		if nc == nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(nc, malformed[rng.Intn(len(malformed))]); err != nil {
			note("malformed", "write: %v", err)
			return
		}
		b, err := io.ReadAll(nc)
		if err != nil || !strings.HasPrefix(string(b), "-ERR Protocol error: ") {
			note("malformed", "got %.80q, %v; want a protocol error and a close", b, err)
			return
		}
		counts.malformed.Add(1)
	})
	// Binary garbage, sent and dropped.
	loop("garbage", 2, func(rng *rand.Rand) {
		nc := dial()
		if nc == nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 1+rng.Intn(8192))
		rng.Read(buf)
		_ = nc.SetDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = nc.Write(buf)
		_, _ = io.Copy(io.Discard, nc)
		counts.garbage.Add(1)
	})
	// Half-sent requests, abandoned.
	loop("half", 1, func(rng *rand.Rand) {
		nc := dial()
		if nc == nil {
			return
		}
		msg := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc"
		_, _ = io.WriteString(nc, msg[:1+rng.Intn(len(msg)-1)])
		time.Sleep(10 * time.Millisecond)
		nc.Close()
		counts.half.Add(1)
	})
	// Half-sent requests held open until the end.
	for range 50 {
		if nc := dial(); nc != nil {
			_, _ = io.WriteString(nc, "*2\r\n$3\r\nGET\r\n$5\r\nab")
			defer nc.Close()
		}
	}
	// Inline floods, read as they come.
	loop("flood", 1, func(rng *rand.Rand) {
		nc := dial()
		if nc == nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		const n = 500
		go func() {
			w := bufio.NewWriter(nc)
			for i := range n {
				fmt.Fprintf(w, "SET flood%d %d\r\nPING\r\n", i%10, i)
			}
			w.Flush()
		}()
		r := bufio.NewReader(nc)
		for range 2 * n {
			line, err := r.ReadString('\n')
			if err != nil || (line != "+OK\r\n" && line != "+PONG\r\n") {
				note("flood", "got %q, %v", line, err)
				return
			}
		}
		counts.flood.Add(1)
	})
	// Slow loris: a byte every 100 ms; the request is answered when it is
	// complete.
	const lorisMsg = "*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n"
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := dial()
			if nc == nil {
				return
			}
			defer nc.Close()
			for i := range len(lorisMsg) {
				if _, err := nc.Write([]byte{lorisMsg[i]}); err != nil {
					note("loris", "write: %v", err)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 64)
			n, err := io.ReadAtLeast(nc, b, len("$5\r\nhello\r\n"))
			if err != nil || string(b[:n]) != "$5\r\nhello\r\n" {
				note("loris", "got %q, %v", b[:n], err)
				return
			}
			counts.loris.Add(1)
		}()
	}
	// Pipelining without ever reading the replies (1 MiB each).
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := dial()
			if nc == nil {
				return
			}
			defer nc.Close()
			req := []byte(strings.Repeat("GET big\r\n", 64))
			for !stopped() {
				_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := nc.Write(req); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						continue // both sides' buffers are full: the server waits for us
					}
					note("nonreader", "write: %v", err)
					return
				}
			}
		}()
	}
	// A huge announced argument, trickled.
	wg.Add(1)
	go func() {
		defer wg.Done()
		nc := dial()
		if nc == nil {
			return
		}
		defer nc.Close()
		_, _ = io.WriteString(nc, "*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$500000000\r\n")
		chunk := strings.Repeat("h", 1024)
		for !stopped() {
			if _, err := io.WriteString(nc, chunk); err != nil {
				note("huge", "write: %v", err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// Millions of announced arguments: closed at the query buffer limit.
	wg.Add(1)
	go func() {
		defer wg.Done()
		nc := dial()
		if nc == nil {
			return
		}
		defer nc.Close()
		_, _ = io.WriteString(nc, "*2000000000\r\n")
		args := []byte(strings.Repeat("$0\r\n\r\n", 10000))
		for !stopped() {
			_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := nc.Write(args); err != nil {
				return // closed: expected once over the limit
			}
		}
		note("manyargs", "still connected after %v", hostileFor)
	}()

	// The well-behaved client.
	victim := DialRaw(t, addr)
	victim.Timeout = 5 * time.Second
	var worst time.Duration
	var ops int
	deadline := time.Now().Add(hostileFor)
	for i := 0; time.Now().Before(deadline); i++ {
		for _, args := range [][]string{{"PING"}, {"SET", "victim", strconv.Itoa(i)}, {"GET", "victim"}} {
			start := time.Now()
			reply, err := victim.TryDo(args...)
			d := time.Since(start)
			if err != nil {
				t.Fatalf("victim %v: %v after %v", args, err, d)
			}
			if args[0] == "GET" && string(reply) != fmt.Sprintf("$%d\r\n%d\r\n", len(strconv.Itoa(i)), i) {
				t.Fatalf("victim GET: %q", reply)
			}
			worst = max(worst, d)
			ops++
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("hostile clients did not stop")
	}

	t.Logf("victim: %d commands, slowest %v; malformed %d, garbage %d, half-sent %d, floods %d, slow loris %d",
		ops, worst, counts.malformed.Load(), counts.garbage.Load(), counts.half.Load(), counts.flood.Load(), counts.loris.Load())
	if worst > maxLatency {
		t.Errorf("a well-behaved client waited %v for a reply (limit %v)", worst, maxLatency)
	}
	errs.Range(func(k, v any) bool {
		t.Errorf("%s: %s", k, v)
		return true
	})
	if counts.malformed.Load() == 0 || counts.loris.Load() != 3 || counts.flood.Load() == 0 {
		t.Errorf("some hostile clients never got through: malformed %d, slow loris %d, floods %d",
			counts.malformed.Load(), counts.loris.Load(), counts.flood.Load())
	}
	if rss0 > 0 {
		if rss := rssKiB(o.Cmd.Process.Pid); rss-rss0 > 400<<10 {
			t.Errorf("server memory grew from %d to %d KiB", rss0, rss)
		} else {
			t.Logf("server memory: %d → %d KiB", rss0, rss)
		}
	}
	if o.Exited() {
		t.Fatalf("the server exited:\n%s", o.Output())
	}
	c := DialRaw(t, addr)
	if reply := c.Do("GET", "victim"); !strings.HasPrefix(string(reply), "$") {
		t.Fatalf("after the hostile clients: %q", reply)
	}
	if reply := c.Do("STRLEN", "huge"); string(reply) != ":0\r\n" {
		t.Fatalf("the trickled huge value was stored: %q", reply)
	}
}

// rssKiB is the resident memory of a process (Linux), or 0.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
