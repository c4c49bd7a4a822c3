package integration

// ONCE across processes: several OS processes (this test binary re-run in
// a child mode, TestHelperProcess) run functions under ONCE on the same
// keys of one server (the built binary). Each run appends to a shared
// ledger file (O_APPEND, one write per line); the parent then checks from
// the ledger that each key's function ran once per keep window (KV-8,
// KV-9, KV-14 across processes) and that every caller got the answer of
// the window it asked in.

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const onceHelperEnv = "ONCEKV_ONCE_HELPER"

// procCfg is what the parent tells each child, through the environment.
type procCfg struct {
	Addr     string
	Ledger   string
	ID       int
	Keys     int
	Workers  int
	KeepMs   int
	Duration time.Duration
}

func (c procCfg) env() []string {
	return []string{
		onceHelperEnv + "=1",
		"ONCEKV_ONCE_ADDR=" + c.Addr,
		"ONCEKV_ONCE_LEDGER=" + c.Ledger,
		"ONCEKV_ONCE_ID=" + strconv.Itoa(c.ID),
		"ONCEKV_ONCE_KEYS=" + strconv.Itoa(c.Keys),
		"ONCEKV_ONCE_WORKERS=" + strconv.Itoa(c.Workers),
		"ONCEKV_ONCE_KEEP=" + strconv.Itoa(c.KeepMs),
		"ONCEKV_ONCE_DURATION=" + strconv.FormatInt(c.Duration.Milliseconds(), 10),
	}
}

func procCfgFromEnv(t *testing.T) procCfg {
	atoi := func(name string) int {
		n, err := strconv.Atoi(os.Getenv(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return procCfg{
		Addr:     os.Getenv("ONCEKV_ONCE_ADDR"),
		Ledger:   os.Getenv("ONCEKV_ONCE_LEDGER"),
		ID:       atoi("ONCEKV_ONCE_ID"),
		Keys:     atoi("ONCEKV_ONCE_KEYS"),
		Workers:  atoi("ONCEKV_ONCE_WORKERS"),
		KeepMs:   atoi("ONCEKV_ONCE_KEEP"),
		Duration: time.Duration(atoi("ONCEKV_ONCE_DURATION")) * time.Millisecond,
	}
}

// TestHelperProcess is the child: it does nothing unless the parent set
// ONCEKV_ONCE_HELPER. Its workers loop: CLAIM … WAIT on a random key; on
// claimed, run (append "run key token at" to the ledger, work a little)
// and COMPLETE with KEEP (then append "complete key token sent recv"); on
// done, append "answer key token sent recv" (the answer names the token
// of the run that made it).
func TestHelperProcess(t *testing.T) {
	if os.Getenv(onceHelperEnv) != "1" {
		t.Skip("child mode of TestOnceProcesses")
	}
	cfg := procCfgFromEnv(t)
	f, err := os.OpenFile(cfg.Ledger, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fmu sync.Mutex
	var ferr error
	logLine := func(format string, args ...any) {
		// One write per line: O_APPEND keeps lines of all processes whole.
		line := fmt.Sprintf(format+"\n", args...)
		if _, err := f.Write([]byte(line)); err != nil {
			fmu.Lock()
			ferr = err
			fmu.Unlock()
		}
	}
	c := redis.NewClient(&redis.Options{
		Addr: cfg.Addr, PoolSize: cfg.Workers, MaxRetries: -1,
		ReadTimeout: -1, ContextTimeoutEnabled: true,
	})
	defer c.Close()
	errs := &errSink{}
	end := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cfg.ID), uint64(w)))
			for time.Now().Before(end) {
				key := fmt.Sprintf("proc:%d", rng.IntN(cfg.Keys))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				sent := time.Now().UnixNano()
				r, err := onceDo(ctx, c, "ONCE.CLAIM", key, "LEASE", 5000, "WAIT", 3000)
				recv := time.Now().UnixNano()
				if err != nil {
					errs.add("child %d: CLAIM %s: %v", cfg.ID, key, err)
					cancel()
					return
				}
				switch r.State {
				case "claimed":
					logLine("run %s %d %d", key, r.Token, recv)
					time.Sleep(time.Duration(1+rng.IntN(10)) * time.Millisecond)
					csent := time.Now().UnixNano()
					err := c.Do(ctx, "ONCE.COMPLETE", key, r.Token, strconv.FormatInt(r.Token, 10), "KEEP", cfg.KeepMs).Err()
					crecv := time.Now().UnixNano()
					if err != nil {
						errs.add("child %d: COMPLETE %s %d: %v", cfg.ID, key, r.Token, err)
					} else {
						logLine("complete %s %d %d %d", key, r.Token, csent, crecv)
					}
				case "done":
					logLine("answer %s %s %d %d", key, r.Detail, sent, recv)
				case "running":
					// WAIT ran out: try again.
				default:
					errs.add("child %d: CLAIM %s: %v", cfg.ID, key, r)
				}
				cancel()
				// Now and then, pause past the keep so that windows end.
				if rng.IntN(8) == 0 {
					time.Sleep(time.Duration(rng.IntN(2*cfg.KeepMs)) * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	errs.report(t)
	if ferr != nil {
		t.Fatalf("ledger: %v", ferr)
	}
}

type ledgerRun struct {
	token               int64
	at                  int64 // claim reply received
	done                bool
	csent, crecv        int64 // COMPLETE sent, its reply received
	runLine, finishLine int
}

type ledgerAnswer struct {
	key        string
	token      int64
	sent, recv int64
	line       int
}

// TestOnceProcesses: 4 processes × 6 workers on 4 keys for 2 s, keep
// 120 ms.
func TestOnceProcesses(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t)
	ledger := filepath.Join(t.TempDir(), "ledger")
	const procs, keepMs = 4, 120
	base := procCfg{Addr: srv.Addr, Ledger: ledger, Keys: 4, Workers: 6, KeepMs: keepMs, Duration: 2 * time.Second}
	var wg sync.WaitGroup
	outs := make([]string, procs)
	fails := make([]error, procs)
	for i := range procs {
		cfg := base
		cfg.ID = i + 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), cfg.env()...)
			out, err := cmd.CombinedOutput()
			outs[i], fails[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range procs {
		if fails[i] != nil || !strings.Contains(outs[i], "--- PASS: TestHelperProcess") {
			t.Errorf("child %d: %v\n%s", i+1, fails[i], outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	runs, answers := readLedger(t, ledger)
	checkLedger(t, runs, answers, keepMs)
}

func readLedger(t *testing.T, path string) (map[string][]*ledgerRun, []ledgerAnswer) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := map[string][]*ledgerRun{}
	byToken := map[int64]*ledgerRun{}
	var answers []ledgerAnswer
	sc := bufio.NewScanner(f)
	n := 0
	num := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ledger line %d: bad number %q", n, s)
		}
		return v
	}
	for sc.Scan() {
		n++
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 4 && fs[0] == "run":
			r := &ledgerRun{token: num(fs[2]), at: num(fs[3]), runLine: n}
			if prev, ok := byToken[r.token]; ok {
				t.Fatalf("ledger line %d: token %d ran twice (first on line %d): one claim, two runners", n, r.token, prev.runLine)
			}
			byToken[r.token] = r
			runs[fs[1]] = append(runs[fs[1]], r)
		case len(fs) == 5 && fs[0] == "complete":
			r, ok := byToken[num(fs[2])]
			if !ok {
				t.Fatalf("ledger line %d: completion of a token that never ran: %q", n, sc.Text())
			}
			r.done, r.csent, r.crecv, r.finishLine = true, num(fs[3]), num(fs[4]), n
		case len(fs) == 5 && fs[0] == "answer":
			answers = append(answers, ledgerAnswer{fs[1], num(fs[2]), num(fs[3]), num(fs[4]), n})
		default:
			t.Fatalf("ledger line %d: torn or unknown line %q", n, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runs, answers
}

// checkLedger checks, per key, in token order: each run started only after
// the previous run's answer was kept for the whole keep window (so the
// function ran once per window), and every answer a caller got is the one
// of the window its request fell in.
func checkLedger(t *testing.T, runs map[string][]*ledgerRun, answers []ledgerAnswer, keepMs int64) {
	t.Helper()
	const slack = int64(3 * time.Millisecond) // the server's clock is in whole ms
	keep := keepMs * int64(time.Millisecond)
	total := 0
	for key, rs := range runs {
		slices.SortFunc(rs, func(a, b *ledgerRun) int { return int(a.token - b.token) })
		for i, r := range rs {
			if !r.done {
				t.Errorf("%s: run %d (ledger line %d) never completed", key, r.token, r.runLine)
				continue
			}
			if i == 0 {
				continue
			}
			p := rs[i-1]
			if r.at < p.csent+keep-slack {
				t.Errorf("%s: run %d started %v after run %d's COMPLETE was sent, within its %d ms keep: the function ran twice in one window (lines %d, %d)",
					key, r.token, time.Duration(r.at-p.csent), p.token, keepMs, p.runLine, r.runLine)
			}
		}
		total += len(rs)
		if len(rs) < 3 {
			t.Errorf("%s: only %d runs: the keep windows were not exercised", key, len(rs))
		}
	}
	for _, a := range answers {
		rs := runs[a.key]
		i := slices.IndexFunc(rs, func(r *ledgerRun) bool { return r.token == a.token })
		if i < 0 {
			t.Errorf("ledger line %d: %s answered %d, which no run of that key made", a.line, a.key, a.token)
			continue
		}
		r := rs[i]
		if a.recv < r.csent {
			t.Errorf("ledger line %d: %s: answer %d received before it was completed", a.line, a.key, a.token)
		}
		if i+1 < len(rs) && a.sent > rs[i+1].at {
			t.Errorf("ledger line %d: %s: a CLAIM sent after run %d had started got the older answer %d",
				a.line, a.key, rs[i+1].token, a.token)
		}
	}
	t.Logf("%d runs on %d keys, %d kept answers replayed", total, len(runs), len(answers))
	if len(answers) < total {
		t.Errorf("only %d replays for %d runs: callers did not share answers", len(answers), total)
	}
}
