package badgerdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// dump is every live and expired key of every database, with kind and
// deadline, plus the counts and a meta record.
type dump struct {
	keys     map[string]store.Value
	counts   []int
	expiring []int
	meta     string
}

func dumpStore(tb testing.TB, s *DB) dump {
	tb.Helper()
	d := dump{keys: map[string]store.Value{}}
	_, err := s.View(func(tx store.Tx) error {
		for db := 0; db < s.Databases(); db++ {
			d.counts = append(d.counts, tx.Len(db))
			d.expiring = append(d.expiring, tx.Expiring(db))
			err := tx.Scan(db, nil, func(k []byte, v store.Value) (bool, error) {
				d.keys[strconv.Itoa(db)+"/"+string(k)] = store.Value{Kind: v.Kind, ExpireAt: v.ExpireAt, Data: bytes.Clone(v.Data)}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		m, err := tx.Meta("once:token-hwm")
		d.meta = string(m)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func sameDump(tb testing.TB, what string, got, want dump) {
	tb.Helper()
	if len(got.keys) != len(want.keys) {
		tb.Errorf("%s: %d keys, want %d", what, len(got.keys), len(want.keys))
	}
	for k, w := range want.keys {
		g, ok := got.keys[k]
		if !ok || g.Kind != w.Kind || g.ExpireAt != w.ExpireAt || !bytes.Equal(g.Data, w.Data) {
			tb.Errorf("%s: %q = %v %c %d (%d bytes), want %c %d (%d bytes)", what, k, ok, g.Kind, g.ExpireAt, len(g.Data), w.Kind, w.ExpireAt, len(w.Data))
		}
	}
	if fmt.Sprint(got.counts, got.expiring) != fmt.Sprint(want.counts, want.expiring) {
		tb.Errorf("%s: counts %v expiring %v, want %v %v", what, got.counts, got.expiring, want.counts, want.expiring)
	}
	if got.meta != want.meta {
		tb.Errorf("%s: token counter %x, want %x", what, got.meta, want.meta)
	}
}

// fillForBackup writes a varied dataset: databases 0, 3 and 15, deadlines,
// ONCE-kind records, a meta record, binary keys, a value in the value log,
// deleted and overwritten keys, some staged only (not yet committed).
func fillForBackup(tb testing.TB, s *DB) {
	tb.Helper()
	far := time.Now().Add(time.Hour).UnixMilli()
	for i := range 300 {
		at := int64(0)
		if i%3 == 0 {
			at = far + int64(i)
		}
		set(tb, s, i%4*5%16, fmt.Sprintf("k:%04d", i), str(strings.Repeat("v", i), at))
	}
	set(tb, s, 0, "\x00bin\xff\r\n", str("\x00\x01", 0))
	set(tb, s, 3, "big", str(strings.Repeat("B", 2<<20), far))
	set(tb, s, 0, "once:done", store.Value{Kind: store.KindOnce, Data: []byte("d-answer"), ExpireAt: 0})
	set(tb, s, 0, "once:running", store.Value{Kind: store.KindOnce, Data: []byte("r-claim"), ExpireAt: far})
	if _, err := s.Update(func(tx store.Tx) error {
		if err := tx.SetMeta("once:token-hwm", []byte{0, 0, 0, 0, 0, 1, 0, 0}); err != nil {
			return err
		}
		if _, err := tx.Delete(0, []byte("k:0000")); err != nil {
			return err
		}
		return tx.Set(5, []byte("k:0001"), str("overwritten", 0))
	}); err != nil {
		tb.Fatal(err)
	}
}

// TestBackupRestore: a backup of a live store, restored into an empty
// directory, brings back every key with its kind, value and deadline, the
// per-database counts and the token counter; the restored directory is an
// oncekv directory that opens and takes writes.
func TestBackupRestore(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	fillForBackup(t, s)
	want := dumpStore(t, s) // includes writes still staged
	file := filepath.Join(t.TempDir(), "b.okv")
	st, err := s.BackupFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backup: %v", st)
	if st.Keys != int64(len(want.keys)) {
		t.Errorf("backup counted %d keys, want %d", st.Keys, len(want.keys))
	}
	// Writes after the backup are not in it.
	set(t, s, 0, "later", str("x", 0))

	dir := filepath.Join(t.TempDir(), "restored")
	rst, err := RestoreFile(DefaultOptions(dir), file)
	if err != nil {
		t.Fatal(err)
	}
	if rst.Records != st.Records || rst.Keys != st.Keys {
		t.Errorf("restore read %v, backup wrote %v", rst, st)
	}
	r := open(t, dir, FsyncAlways, nil)
	sameDump(t, "restored", dumpStore(t, r), want)
	set(t, r, 0, "new", str("y", 0))

	// Offline backup of the restored directory (closed) gives the same data.
	r.Close()
	file2 := filepath.Join(t.TempDir(), "b2.okv")
	if _, err := BackupDir(DefaultOptions(dir), file2); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	if _, err := RestoreFile(DefaultOptions(dir2), file2); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, dir2, FsyncEverysec, nil)
	want.keys["0/new"] = str("y", 0)
	want.counts[0]++
	sameDump(t, "backup of the restore", dumpStore(t, r2), want)
}

// TestBackupIsASnapshot: a backup taken while writers run is one instant
// of the store: every pair written in one transaction is in it whole.
func TestBackupIsASnapshot(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				v := str(strconv.Itoa(i), 0)
				_, err := s.Update(func(tx store.Tx) error {
					if err := tx.Set(0, []byte(fmt.Sprintf("a%d", w)), v); err != nil {
						return err
					}
					return tx.Set(1, []byte(fmt.Sprintf("b%d", w)), v)
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	for round := range 3 {
		var buf bytes.Buffer
		if _, err := s.Backup(&buf); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := Restore(DefaultOptions(dir), &buf); err != nil {
			t.Fatal(err)
		}
		r := open(t, dir, FsyncEverysec, nil)
		for w := range 4 {
			a, _ := get(t, r, 0, fmt.Sprintf("a%d", w))
			b, _ := get(t, r, 1, fmt.Sprintf("b%d", w))
			if a != b {
				t.Errorf("round %d writer %d: a=%s b=%s: backup tore a transaction", round, w, a, b)
			}
		}
		r.Close()
	}
	cancel()
	wg.Wait()
}

// TestRestoreRefuses: restore never writes into a non-empty directory, and
// a truncated, damaged or foreign file fails with a clear error, leaving
// the target as it was (absent or empty).
func TestRestoreRefuses(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	fillForBackup(t, s)
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()

	nonEmpty := t.TempDir()
	os.WriteFile(filepath.Join(nonEmpty, "x"), []byte("x"), 0o644)
	if _, err := Restore(DefaultOptions(nonEmpty), bytes.NewReader(good)); err == nil || !strings.Contains(err.Error(), nonEmpty) {
		t.Fatalf("restore into a non-empty dir: %v", err)
	}
	own := t.TempDir()
	open(t, own, FsyncEverysec, nil).Close()
	if _, err := Restore(DefaultOptions(own), bytes.NewReader(good)); err == nil {
		t.Fatal("restore over an existing oncekv dir succeeded")
	}

	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 0x40
	bad := map[string][]byte{
		"empty":            nil,
		"foreign":          []byte("REDIS0011\xfa\x09redis-ver"),
		"header only":      good[:len(backupHeader)],
		"cut mid-record":   good[:len(good)/3],
		"no checksum":      good[:len(good)-4],
		"flipped bit":      flip,
		"trailing garbage": append(bytes.Clone(good), 'x'),
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "new")
			_, err := Restore(DefaultOptions(dir), bytes.NewReader(b))
			if err == nil {
				t.Fatal("restore succeeded")
			}
			t.Logf("error: %v", err)
			if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
				t.Fatalf("failed restore left %s behind (%v)", dir, serr)
			}
			// Into an existing empty directory: left empty.
			empty := t.TempDir()
			if _, err := Restore(DefaultOptions(empty), bytes.NewReader(b)); err == nil {
				t.Fatal("restore succeeded")
			}
			if n := dirNames(t, empty); len(n) != 0 {
				t.Fatalf("failed restore left %v", n)
			}
		})
	}
}
