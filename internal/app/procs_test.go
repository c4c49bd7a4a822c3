package app

import (
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
)

func TestProcs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, cpus, want int
	}{
		{name: "the runtime's choice", cpus: 2, want: 2},
		{name: "one CPU", cpus: 1, want: 1},
		{name: "directive", n: 1, cpus: 2, want: 1},
		{name: "directive over the CPUs", n: 4, cpus: 2, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Procs(tc.n, tc.cpus); got != tc.want {
				t.Fatalf("Procs(%d, %d) = %d, want %d", tc.n, tc.cpus, got, tc.want)
			}
		})
	}
}

// restoreProcs puts GOMAXPROCS back after a test that changes it.
func restoreProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
}

func TestApplyProcs(t *testing.T) {
	restoreProcs(t)
	cfg := config.Default()
	cfg.Procs = 3
	if got := ApplyProcs(cfg, zap.NewNop()); got != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Fatalf("procs 3: ApplyProcs = %d, GOMAXPROCS = %d", got, runtime.GOMAXPROCS(0))
	}
	cfg.Procs = 0
	want := startProcs()
	if got := ApplyProcs(cfg, zap.NewNop()); got != want || runtime.GOMAXPROCS(0) != want {
		t.Fatalf("procs 0: ApplyProcs = %d, GOMAXPROCS = %d, want %d", got, runtime.GOMAXPROCS(0), want)
	}
}

// CONFIG SET procs changes the process's processors at once, and INFO
// server shows the number in force.
func TestConfigSetProcs(t *testing.T) {
	restoreProcs(t)
	a := startRT(t, zap.NewNop())
	c := dialRT(t, a)
	for _, n := range []int{3, 1} {
		c.expect("+OK", "CONFIG", "SET", "procs", strconv.Itoa(n))
		if got := runtime.GOMAXPROCS(0); got != n {
			t.Fatalf("after CONFIG SET procs %d: GOMAXPROCS = %d", n, got)
		}
		if got := c.configGet("procs"); got != strconv.Itoa(n) {
			t.Errorf("CONFIG GET procs = %q, want %d", got, n)
		}
		if got := infoField(t, c, "oncekv_procs"); got != strconv.Itoa(n) {
			t.Errorf("INFO oncekv_procs = %q, want %d", got, n)
		}
	}
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'procs') - argument must be between 0 and 1024 inclusive",
		"CONFIG", "SET", "procs", "-1")
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("a refused CONFIG SET changed GOMAXPROCS to %d", got)
	}
}

// infoField reads INFO server and returns one field's value.
func infoField(t *testing.T, c *rtConn, name string) string {
	t.Helper()
	_ = c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(encode("INFO", "server")); err != nil {
		t.Fatal(err)
	}
	head, err := c.r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO server: %q %v", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, body); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO server has no %s", name)
	return ""
}
