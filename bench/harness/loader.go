package main

// Loading keys: SET commands generated here and written over a few
// connections, pipelined with a bounded number in flight (what
// `redis-cli --pipe` does with generated input, with progress and
// without flooding the server's input buffers), every reply checked.

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
)

const (
	loadChunk  = 512 // commands per write
	loadWindow = 8   // writes in flight per connection
)

// loadStats is what a load took.
type loadStats struct {
	keys    int64
	elapsed time.Duration
}

func (s loadStats) rate() float64 { return float64(s.keys) / s.elapsed.Seconds() }

// load sets keys [from, to) with values of size bytes on addr over conns
// connections, printing progress to progress every 5 s.
func load(addr string, from, to int64, size, conns int, label string, progress io.Writer) (loadStats, error) {
	if err := checkKeyRange(to); err != nil {
		return loadStats{}, err
	}
	var next, done atomic.Int64
	next.Store(from)
	var failed atomic.Bool
	errs := make([]error, conns)
	var wg sync.WaitGroup
	start := time.Now()
	stopProgress := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				d, el := done.Load(), time.Since(start)
				fmt.Fprintf(progress, "harness: loading %s: %s of %s keys, %.0f keys/s\n",
					label, thousands(float64(from+d)), thousands(float64(to)), float64(d)/el.Seconds())
			}
		}
	}()
	for ci := range conns {
		wg.Go(func() {
			errs[ci] = loadConn(addr, &next, &done, &failed, to, size)
			if errs[ci] != nil {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	close(stopProgress)
	if err := errors.Join(errs...); err != nil {
		return loadStats{}, fmt.Errorf("load %s: %w", label, err)
	}
	return loadStats{keys: to - from, elapsed: time.Since(start)}, nil
}

// loadConn writes chunks of SETs taken from next on one connection while
// a second goroutine reads and checks their replies.
func loadConn(addr string, next, done *atomic.Int64, failed *atomic.Bool, to int64, size int) error {
	c, err := benchkit.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	pending := make(chan int, loadWindow)
	readErr := make(chan error, 1)
	go func() {
		for n := range pending {
			for range n {
				r, err := c.Read()
				if err == nil && (r.Kind != '+' || r.Str != "OK") {
					err = fmt.Errorf("SET: %v, want OK", r)
				}
				if err != nil {
					failed.Store(true)
					readErr <- err
					for range pending { // let the writer finish
					}
					return
				}
			}
			done.Add(int64(n))
		}
		readErr <- nil
	}()
	var buf []byte
	var werr error
	for !failed.Load() {
		lo := next.Add(loadChunk) - loadChunk
		if lo >= to {
			break
		}
		hi := min(lo+loadChunk, to)
		buf = buf[:0]
		for i := lo; i < hi; i++ {
			buf = appendSet(buf, i, size)
		}
		if werr = c.SetDeadline(time.Now().Add(5 * time.Minute)); werr != nil {
			break
		}
		if werr = c.Write(buf); werr != nil {
			break
		}
		pending <- int(hi - lo)
	}
	if werr != nil {
		_ = c.Close() // the reader may wait for replies that will not come
	}
	close(pending)
	return errors.Join(werr, <-readErr)
}

// verify GETs samples keys of [0, n) (the first, the last and random ones
// between) on addr and checks their values.
func verify(addr string, n int64, size, samples int) error {
	if n == 0 {
		return nil
	}
	c, err := benchkit.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for s := range samples {
		i := rand.Int64N(n)
		switch s {
		case 0:
			i = 0
		case 1:
			i = n - 1
		}
		r, err := c.Do("GET", keyName(i))
		if err != nil {
			return err
		}
		if want := valueOf(i, size); r.Kind != '$' || r.Str != want {
			return fmt.Errorf("GET %s: %v, want %q", keyName(i), r, want)
		}
	}
	return nil
}
