package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testserver"
)

// TestSoakSeesExpiry: a short soak against an in-process server runs
// cycles in every interval and, with answers kept shorter than the run,
// sees the server expire them; it reads this process's CPU time.
func TestSoakSeesExpiry(t *testing.T) {
	a := testserver.Start(t, "--appendfsync", "everysec")
	var out bytes.Buffer
	lines, err := run(context.Background(), config{
		addr: a.Addr().String(), pid: os.Getpid(), clients: 4,
		keep: 100 * time.Millisecond, duration: 1200 * time.Millisecond, every: 300 * time.Millisecond,
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 3 {
		t.Fatalf("%d lines, want at least 3:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		if l.cycles <= 0 || l.perSecond <= 0 {
			t.Fatalf("interval %d ran no cycles:\n%s", i, out.String())
		}
	}
	if last := lines[len(lines)-1]; last.expired <= 0 {
		t.Fatalf("no keys expired by the end (answers kept 100 ms):\n%s", out.String())
	}
	if !strings.Contains(out.String(), "server CPU/cycle") {
		t.Fatalf("no CPU column with a pid:\n%s", out.String())
	}
}

func TestCPUTime(t *testing.T) {
	if cpuTime(0) != 0 {
		t.Fatal("cpuTime(0) != 0")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	start := cpuTime(os.Getpid())
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
	}
	if got := cpuTime(os.Getpid()); got <= start {
		t.Fatalf("cpuTime did not grow over 50 ms of spinning: %v then %v", start, got)
	}
}
