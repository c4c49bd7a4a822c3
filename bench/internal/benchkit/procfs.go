package benchkit

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mem is a process's memory as /proc/<pid>/status reports it, in bytes.
type Mem struct {
	RSS int64 // VmRSS: resident now
	HWM int64 // VmHWM: the most resident since it started
	// Anon and File split RSS: the process's own memory, and pages of
	// files it maps (Badger's tables and logs), which are page cache the
	// kernel can take back.
	Anon int64 // RssAnon
	File int64 // RssFile
}

// ReadMem reads VmRSS, VmHWM, RssAnon and RssFile of pid (Linux only).
func ReadMem(pid int) (Mem, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Mem{}, err
	}
	var m Mem
	for l := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(l, ":")
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
		}
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return Mem{}, fmt.Errorf("/proc/%d/status: %q", pid, l)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Mem{}, fmt.Errorf("/proc/%d/status: %q", pid, l)
		}
		*dst = kb << 10
	}
	if m.RSS == 0 {
		return Mem{}, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return m, nil
}

// DirSize returns the bytes of disk the regular files under dir take (as
// du counts them: sparse and preallocated files count what they use, not
// their length).
func DirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += allocated(info)
		}
		return nil
	})
	return n
}
