package commands

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// osName is what INFO server's os field shows: the kernel's name,
// release and machine, as uname(2) tells them (as Redis shows them).
func osName() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	return utsString(u.Sysname[:]) + " " + utsString(u.Release[:]) + " " + utsString(u.Machine[:])
}

// utsString reads a NUL-terminated field of Utsname (int8 or uint8,
// depending on the architecture).
func utsString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(bytes.TrimSpace(b))
}

// multiplexingAPI is the readiness API Go's network poller uses, and
// monotonicClock the clock its monotonic time reads.
const (
	multiplexingAPI = "epoll"
	monotonicClock  = "POSIX clock_gettime"
)

// totalSystemMemory is MemTotal of /proc/meminfo, in bytes (0 if unknown).
func totalSystemMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// rssBytes is the resident set size, from /proc/self/statm.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
