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

// restoreProcs puts GOMAXPROCS back after a test that changes it.
func restoreProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
}

func TestApplyProcs(t *testing.T) {
	restoreProcs(t)
	t.Setenv("GOMAXPROCS", "")
	apply := func(n int) int {
		t.Helper()
		cfg := config.Default()
		cfg.Procs = n
		got := ApplyProcs(cfg, zap.NewNop())
		if now := runtime.GOMAXPROCS(0); got != now {
			t.Fatalf("procs %d: ApplyProcs = %d, GOMAXPROCS = %d", n, got, now)
		}
		return got
	}
	if got := apply(3); got != 3 {
		t.Fatalf("procs 3: %d", got)
	}
	// 0 returns to the runtime's default, whatever was set before.
	def := apply(0)
	runtime.GOMAXPROCS(def + 1)
	if got := apply(0); got != def {
		t.Fatalf("procs 0 after GOMAXPROCS %d: %d, want the default %d", def+1, got, def)
	}
	// The GOMAXPROCS variable is the runtime's choice when set; a
	// positive procs wins over it.
	t.Setenv("GOMAXPROCS", strconv.Itoa(def+2))
	if got := apply(0); got != def+2 {
		t.Fatalf("procs 0 with GOMAXPROCS=%d: %d", def+2, got)
	}
	if got := apply(1); got != 1 {
		t.Fatalf("procs 1 with GOMAXPROCS=%d: %d", def+2, got)
	}
}

// CONFIG SET procs changes the process's processors at once, and INFO
// server shows the number in force.
func TestConfigSetProcs(t *testing.T) {
	restoreProcs(t)
	a := startRT(t, zap.NewNop())
	c := dialRT(t, a)
	t.Setenv("GOMAXPROCS", "")
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
	// procs 0: back to the runtime's default.
	c.expect("+OK", "CONFIG", "SET", "procs", "0")
	got := infoField(t, c, "oncekv_procs")
	runtime.SetDefaultGOMAXPROCS()
	if def := runtime.GOMAXPROCS(0); got != strconv.Itoa(def) {
		t.Errorf("after CONFIG SET procs 0: oncekv_procs = %q, want the default %d", got, def)
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
