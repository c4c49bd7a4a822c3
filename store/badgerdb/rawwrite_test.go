package badgerdb

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writeRaw appends what it is given, all of it, at the file's offset, as
// os.File's Write does, and reports a failed write as one.
func TestWriteRaw(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := []byte("first record,")
	if n, err := writeRaw(f, want); n != len(want) || err != nil {
		t.Fatalf("writeRaw = %d, %v", n, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	if n, err := writeRaw(f, big); n != len(big) || err != nil {
		t.Fatalf("writeRaw of 16 MiB = %d, %v", n, err)
	}
	want = append(want, big...)
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file holds %d bytes, not the %d written in order (%v)", len(got), len(want), err)
	}

	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = writeRaw(ro, []byte("x"))
	var pe *os.PathError
	if !errors.Is(err, syscall.EBADF) || !errors.As(err, &pe) || pe.Path != path {
		t.Fatalf("writeRaw to a read-only file: %v; want EBADF naming the file", err)
	}
	ro.Close()
	if _, err := writeRaw(ro, []byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("writeRaw to a closed file: %v; want os.ErrClosed", err)
	}
}
