package main

// What the report says about the machine and the software measured.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// machine describes where and what a run measured.
type machine struct {
	NProc     string
	CPU       string
	Mem       string
	Kernel    string
	Go        string
	Redis     string // redis-server --version
	Benchmark string // redis-benchmark --version
	Commit    string
	DataFS    string // file system of the servers' data
}

func describeMachine(h *harness) machine {
	m := machine{
		NProc:     firstLine(run("nproc")),
		CPU:       cpuModel(),
		Mem:       memTotal(),
		Kernel:    firstLine(readFile("/proc/sys/kernel/osrelease")),
		Go:        firstLine(run("go", "version")),
		Redis:     firstLine(run(h.redisBin, "--version")),
		Benchmark: firstLine(run(h.benchBin, "--version")),
		Commit:    gitCommit(h.repo, h.out, filepath.Join(h.chartDir, "throughput.svg"), filepath.Join(h.chartDir, "memory.svg")),
		DataFS:    fsType(h.work),
	}
	if m.NProc == "" {
		m.NProc = fmt.Sprint(runtime.NumCPU())
	}
	return m
}

func run(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

func cpuModel() string {
	for l := range strings.SplitSeq(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	for l := range strings.SplitSeq(readFile("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return "?"
}

// gitCommit names the commit checked out in repo, and whether any tracked
// file differs from it, leaving out the files the harness writes itself
// (own: BENCHMARKS.md and its charts), which a run just before leaves
// modified.
func gitCommit(repo string, own ...string) string {
	c := run("git", "-C", repo, "rev-parse", "--short=12", "HEAD")
	if c == "" {
		return "?"
	}
	args := []string{"-C", repo, "status", "--porcelain", "--untracked-files=no", "--", "."}
	for _, f := range own {
		if rel, err := filepath.Rel(repo, f); err == nil && filepath.IsLocal(rel) {
			args = append(args, ":(exclude)"+filepath.ToSlash(rel))
		}
	}
	if run("git", args...) != "" {
		c += " with uncommitted changes"
	}
	return c
}

func loadavg() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// runLine is the line each section opens with: when, on what, how loaded.
func (m machine) runLine(start, end time.Time, load0, load1 string) string {
	return fmt.Sprintf("Measured %s UTC (took %s) on commit %s · %s CPUs (%s), %s RAM, Linux %s · %s · %s · %s · servers' data on %s · load average before %s, after %s.",
		start.UTC().Format("2006-01-02 15:04"), end.Sub(start).Round(time.Second), m.Commit, m.NProc, m.CPU, m.Mem, m.Kernel,
		m.Go, m.Redis, m.Benchmark, m.DataFS, load0, load1)
}
