package badgerdb

import (
	"os"
	"syscall"
	"unsafe"
)

// writeRaw appends b to f with write(2) made as a raw system call, one the
// scheduler is not told of, for the log's records.
//
// Go tells its scheduler of every other system call, and one that starts
// while the runtime's monitor thread (sysmon) sleeps wakes it: it sleeps
// whenever every processor is idle, and once woken polls every 20 µs for
// a millisecond. A log round's write came often enough to keep it doing
// so: under unpipelined SETs (redis-benchmark -c 50), 3,600 of its sleeps
// a second and a tenth of the server's CPU, and its wake-ups took the
// cores the clients need. Clients' sockets are read and written the same
// way, for the same reason (resp/sockio.go).
//
// The price: a write that blocks (the kernel throttling a process with
// too many dirty pages, or a journal commit in the way) holds its
// processor until it returns, where Go would hand the processor to
// another thread; the other processor serves on, and a garbage
// collection's stop waits for the write. Redis's event loop makes the
// same write and waits for it, with every client.
func writeRaw(f *os.File, b []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Write(b)
	}
	done := 0
	var errno syscall.Errno
	err = rc.Write(func(fd uintptr) bool {
		for done < len(b) && errno == 0 {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
			switch {
			case e == syscall.EINTR:
			case e != 0:
				errno = e
			case n == 0:
				errno = syscall.EIO // not seen of a file; os.File's Write fails too
			default:
				done += int(n)
			}
		}
		return true
	})
	if err != nil {
		// The file is closed (the function was not called): os.File's
		// Write says so as its callers expect.
		return f.Write(b)
	}
	if errno != 0 {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: errno}
	}
	return done, err
}
