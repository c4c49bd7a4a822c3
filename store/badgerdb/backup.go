package badgerdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/store"
)

// A backup is a consistent snapshot of every Badger key of the store (the
// keyspace with its deadlines, the expiry index, and server records such as
// the ONCE token counter), in a format of our own, independent of Badger's
// on-disk layout:
//
//	"oncekv backup 1\n"
//	{ uvarint(len key) key uvarint(len value) value }   one per Badger key
//	uvarint(0) uint64(records) uint32(CRC-32C of everything after the header)
//
// The trailer makes a truncated or damaged file an error at restore, not a
// partial database.
//
// A backup of a store whose databases SWAPDB swapped says "oncekv backup
// 2" instead: it holds SWAPDB's table (dbmap.go), which a build that knows
// only version 1 would restore and then ignore, showing each swapped
// database's keys under the other's number; such a build refuses it, as a
// format-2 build refuses a format-3 directory. Restore reads both.
const (
	backupHeader        = "oncekv backup 1\n"
	backupHeaderSwapped = "oncekv backup 2\n"
	// backupHeaderObjects heads a backup of a store that holds objects
	// (elems.go), which builds that know only versions 1 and 2 refuse.
	backupHeaderObjects = "oncekv backup 3\n"
)

const (
	maxBackupKey   = 1 << 20
	maxBackupValue = 1 << 31
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// BackupStats describe a backup.
type BackupStats struct {
	Records int64 // Badger keys written (keys, expiry entries, records)
	Keys    int64 // keys of the keyspace, all databases
	Bytes   int64
}

// Backup writes a consistent snapshot of the store to w while the store
// keeps serving: it holds the keyspace lock only to commit what is staged
// and open a Badger read transaction, then streams that snapshot. Every
// write acknowledged before Backup was called is in it.
func (s *DB) Backup(w io.Writer) (BackupStats, error) {
	if s.closed.Load() {
		return BackupStats{}, store.ErrClosed
	}
	s.mu.Lock()
	err := s.drain()
	var txn *badger.Txn
	if err == nil {
		txn = s.bdb.NewTransaction(false)
	}
	header := backupHeader
	if m := s.dbMap.Load(); m != nil && !m.identity() {
		header = backupHeaderSwapped
	}
	if s.nextObj > 0 {
		header = backupHeaderObjects
	}
	s.mu.Unlock()
	if err != nil {
		return BackupStats{}, fmt.Errorf("backup: commit staged writes: %w", err)
	}
	defer txn.Discard()

	var st BackupStats
	bw := bufio.NewWriterSize(w, 256<<10)
	crc := crc32.New(crcTable)
	out := io.MultiWriter(bw, crc)
	if _, err := io.WriteString(bw, header); err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	st.Bytes = int64(len(header))
	var num [binary.MaxVarintLen64]byte
	put := func(b []byte) error {
		n := binary.PutUvarint(num[:], uint64(len(b)))
		if _, err := out.Write(num[:n]); err != nil {
			return err
		}
		_, err := out.Write(b)
		st.Bytes += int64(n + len(b))
		return err
	}
	it := s.newIterator(txn, badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	var val []byte
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()
		if val, err = item.ValueCopy(val[:0]); err != nil {
			return st, fmt.Errorf("backup: read %q: %w", key, err)
		}
		if err := put(key); err != nil {
			return st, fmt.Errorf("backup: %w", err)
		}
		if err := put(val); err != nil {
			return st, fmt.Errorf("backup: %w", err)
		}
		st.Records++
		if len(key) > 0 && key[0] == spaceKeys {
			st.Keys++
		}
	}
	var trailer [1 + 8]byte
	binary.BigEndian.PutUint64(trailer[1:], uint64(st.Records))
	if _, err := out.Write(trailer[:]); err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	if err := binary.Write(bw, binary.BigEndian, crc.Sum32()); err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	st.Bytes += int64(len(trailer) + 4)
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	return st, nil
}

// BackupFile writes a backup to path atomically: to a temporary file
// beside it, synced, then renamed over path. A failed backup leaves no
// file behind.
func (s *DB) BackupFile(path string) (BackupStats, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	st, err := s.Backup(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return st, fmt.Errorf("backup to %s: %w", path, err)
	}
	s.log.Info("backup written", zap.String("file", path), zap.Int64("keys", st.Keys),
		zap.Int64("records", st.Records), zap.Int64("bytes", st.Bytes))
	return st, nil
}

// BackupDir backs up the stopped store in opts.Dir to path (offline
// backup: a running server holds the directory; use its BACKUP command).
func BackupDir(opts Options, path string) (BackupStats, error) {
	fresh, _, err := checkDir(opts.Dir)
	if err != nil {
		return BackupStats{}, err
	}
	if fresh {
		return BackupStats{}, fmt.Errorf("backup: %s is empty or missing: nothing to back up", opts.Dir)
	}
	s, err := Open(opts)
	if err != nil {
		if strings.Contains(err.Error(), "directory lock") {
			err = fmt.Errorf("%w (a running server holds %s: use its BACKUP command, or stop it first)", err, opts.Dir)
		}
		return BackupStats{}, err
	}
	st, err := s.BackupFile(path)
	return st, errors.Join(err, s.Close())
}

// RestoreFile restores the backup in path into opts.Dir (see Restore).
func RestoreFile(opts Options, path string) (BackupStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return BackupStats{}, fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	return Restore(opts, f)
}

// Restore loads a backup into opts.Dir, which must be empty or missing: it
// never merges into or overwrites data. The directory is marked as oncekv's
// only once the whole backup is loaded, checked and synced, so an
// interrupted or failed restore leaves a directory that refuses to open
// (failures also remove what they wrote).
func Restore(opts Options, r io.Reader) (st BackupStats, err error) {
	dir := opts.Dir
	fresh, _, err := checkDir(dir)
	if err != nil || !fresh {
		if err == nil {
			err = fmt.Errorf("%s is not empty", dir)
		}
		return st, fmt.Errorf("restore: refusing to restore into %s: %w (restore into an empty or new directory)", dir, err)
	}
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if err != nil {
			cleanDir(dir, created)
		}
	}()
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	bdb, err := badger.Open(badgerOptions(opts))
	if err != nil {
		return st, fmt.Errorf("restore: open %s: %w", dir, err)
	}
	st, err = load(bdb, r)
	if err == nil {
		err = bdb.Sync()
	}
	format := formatPlain
	if err == nil {
		// A backup of a store that SWAPDB swapped holds its table; one
		// of a store that made objects, their counter.
		err = bdb.View(func(txn *badger.Txn) error {
			for _, c := range []struct {
				key    []byte
				format int
			}{{dbMapKey, formatSwapTable}, {metaKey(objSeqName), formatObjects}} {
				_, err := txn.Get(c.key)
				switch {
				case err == nil:
					format = max(format, c.format)
				case !errors.Is(err, badger.ErrKeyNotFound):
					return err
				}
			}
			return nil
		})
	}
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return st, fmt.Errorf("restore into %s: %w", dir, err)
	}
	if err := writeMarker(dir, format); err != nil {
		return st, fmt.Errorf("restore: %w", err)
	}
	return st, nil
}

// load reads a backup into bdb, checking its trailer.
func load(bdb *badger.DB, r io.Reader) (BackupStats, error) {
	var st BackupStats
	br := bufio.NewReaderSize(r, 256<<10)
	head := make([]byte, len(backupHeader))
	if _, err := io.ReadFull(br, head); err != nil || !slices.Contains([]string{backupHeader, backupHeaderSwapped, backupHeaderObjects}, string(head)) {
		return st, fmt.Errorf("not an oncekv backup (the file does not start with %q, %q or %q)", backupHeader, backupHeaderSwapped, backupHeaderObjects)
	}
	st.Bytes = int64(len(head))
	cr := &crcReader{r: br, h: crc32.New(crcTable)}
	wb := bdb.NewWriteBatch()
	defer wb.Cancel()
	for {
		key, err := readChunk(cr, maxBackupKey)
		if err != nil {
			return st, fmt.Errorf("backup truncated or damaged after %d records: %w", st.Records, err)
		}
		if len(key) == 0 {
			break
		}
		val, err := readChunk(cr, maxBackupValue)
		if err != nil {
			return st, fmt.Errorf("backup truncated or damaged after %d records: %w", st.Records, err)
		}
		if err := wb.Set(key, val); err != nil {
			return st, err
		}
		st.Records++
		if key[0] == spaceKeys {
			st.Keys++
		}
	}
	var n [8]byte
	if _, err := io.ReadFull(cr, n[:]); err != nil {
		return st, fmt.Errorf("backup truncated: no trailer: %w", err)
	}
	sum := cr.h.Sum32()
	var want [4]byte
	if _, err := io.ReadFull(br, want[:]); err != nil {
		return st, fmt.Errorf("backup truncated: no checksum: %w", err)
	}
	if got := binary.BigEndian.Uint64(n[:]); got != uint64(st.Records) {
		return st, fmt.Errorf("backup damaged: trailer counts %d records, the file holds %d", got, st.Records)
	}
	if binary.BigEndian.Uint32(want[:]) != sum {
		return st, errors.New("backup damaged: checksum mismatch")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return st, errors.New("backup damaged: data after the trailer")
	}
	st.Bytes += cr.n + 4
	return st, wb.Flush()
}

func readChunk(r *crcReader, limit uint64) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, noEOF(err)
	}
	if n > limit {
		return nil, fmt.Errorf("record of %d bytes exceeds %d", n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, noEOF(err)
	}
	return b, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// crcReader hashes and counts what is read through it.
type crcReader struct {
	r *bufio.Reader
	h hash.Hash32
	n int64
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.h.Write([]byte{b})
		c.n++
	}
	return b, err
}

// cleanDir removes what a failed restore wrote into dir (which was empty).
func cleanDir(dir string, created bool) {
	if created {
		os.RemoveAll(dir)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !ignoredEntries[e.Name()] {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// String is a one-line summary for logs and command replies.
func (st BackupStats) String() string {
	return strconv.FormatInt(st.Keys, 10) + " keys, " + strconv.FormatInt(st.Records, 10) + " records, " + bytesText(st.Bytes)
}
