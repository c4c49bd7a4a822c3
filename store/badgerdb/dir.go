package badgerdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// The data directory carries a marker file, written when oncekv creates the
// directory, so that a directory holding someone else's files (or another
// program's Badger database) is never opened, and so silently emptied or
// mixed with ours, by mistake.
const (
	// MarkerFile is the name of the marker in the data directory.
	MarkerFile = "oncekv.meta"
	// FormatVersion is the newest on-disk layout this build reads and
	// writes. Format 2 promises that the expiry index is exact above the
	// deadline its meta record sweep-check-up-to holds (exactIndex);
	// format 1, which this build reads and upgrades, promised nothing of
	// the kind. Builds that know only format 1 refuse format 2, so that
	// they do not write stale entries where format 2 says there are none.
	// Format 3 may hold SWAPDB's table of databases (dbmap.go): builds
	// that know only format 2 refuse it, as they would ignore the table
	// and show each swapped database's keys under the other's number.
	// Format 4 may hold objects (elems.go): values with the object flag
	// in their kind byte and elements apart, which builds that know only
	// format 3 would misread.
	FormatVersion = formatObjects
	// formatStaleIndex is the format whose expiry index may hold stale
	// entries anywhere.
	formatStaleIndex = 1
	// formatPlain is the format of a directory whose databases SWAPDB
	// never swapped: this build writes it, so that such a directory
	// still opens with a build that knows only format 2.
	formatPlain = 2
	// formatSwapTable is the format of a directory that may hold SWAPDB's
	// table: the first SWAPDB raises the marker to it, durably, before
	// the table is staged (raiseFormat), so that no directory holds the
	// table under a marker of format 2. It is never lowered.
	formatSwapTable = 3
	// formatObjects is the format of a directory that may hold objects:
	// the first NewObj raises the marker to it, durably, before the
	// object is staged (raiseFormat). It is never lowered.
	formatObjects = 4
	markerHead    = "oncekv data directory"
	// markerTmp is the file the marker is written to before it is
	// renamed into place.
	markerTmp = MarkerFile + ".tmp"
	// RunningFile is in the data directory while a store has it open,
	// holding the boot's ID: found at Open with another boot's, it says
	// that the machine went down with the store open (lostPower).
	RunningFile = "oncekv.running"
)

// ErrForeignDir is wrapped by the error of Open on a non-empty directory
// that oncekv did not create (no marker, or another program's marker).
var ErrForeignDir = errors.New("not an oncekv data directory")

// ErrCorruptDir is wrapped by the error of Open on an oncekv directory whose
// database is damaged in a way that Badger would either refuse or, worse,
// paper over by dropping data.
var ErrCorruptDir = errors.New("data directory is damaged")

// ignoredEntries may be in an empty data directory (a mount point).
var ignoredEntries = map[string]bool{"lost+found": true}

func markerText(format int) []byte {
	return []byte(markerHead + "\nformat " + strconv.Itoa(format) + "\n")
}

// checkDir decides whether dir may be opened: fresh reports an empty (or
// missing) directory, or one holding only the marker's temporary file,
// to be marked as ours before Badger creates its files; format is the
// format its marker names. An error names the
// directory and what was found there.
func checkDir(dir string) (fresh bool, format int, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, formatPlain, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("read data dir %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if !ignoredEntries[e.Name()] {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 || slices.Equal(names, []string{markerTmp}) {
		// Only the marker's temporary file: the first start was killed
		// while it wrote the marker, before Badger wrote anything
		// (KV-6). writeMarker writes it anew.
		return true, formatPlain, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if errors.Is(err, os.ErrNotExist) {
		what := "files"
		if slices.Contains(names, "MANIFEST") {
			what = "a Badger database"
		}
		return false, 0, fmt.Errorf("%w: %s holds %s (%s) but no %s marker; it belongs to another program, "+
			"or is an interrupted restore: refusing to start over it (point --dir at an empty or oncekv "+
			"directory; if it is oncekv data from before the marker existed, create %s holding %q)",
			ErrForeignDir, dir, what, list(names), MarkerFile, MarkerFile, string(markerText(formatStaleIndex)))
	}
	if err != nil {
		return false, 0, fmt.Errorf("read %s: %w", filepath.Join(dir, MarkerFile), err)
	}
	format, err = parseMarker(b)
	if err != nil {
		return false, 0, fmt.Errorf("%s: %w", filepath.Join(dir, MarkerFile), err)
	}
	return false, format, checkBadgerFiles(dir, names)
}

// parseMarker checks the marker's content and returns its format.
func parseMarker(b []byte) (int, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || lines[0] != markerHead || !strings.HasPrefix(lines[1], "format ") {
		return 0, fmt.Errorf("%w: the marker does not read %q (found %q)", ErrForeignDir, markerHead, truncateText(string(b), 80))
	}
	v, err := strconv.Atoi(strings.TrimPrefix(lines[1], "format "))
	if err != nil {
		return 0, fmt.Errorf("%w: unreadable format line %q", ErrCorruptDir, lines[1])
	}
	if v < formatStaleIndex || v > FormatVersion {
		return 0, fmt.Errorf("data format %d, this oncekv reads formats %d to %d (use a matching oncekv, or backup and restore)",
			v, formatStaleIndex, FormatVersion)
	}
	return v, nil
}

// checkBadgerFiles catches the damage that Badger does not report: a
// missing MANIFEST makes it start an empty database beside the old files,
// and a MANIFEST that lost its tail makes it delete the tables it no longer
// lists. After a crash, tables the MANIFEST does not list yet are normal:
// Badger writes a table before it records it, whether the table comes
// from a memtable (whose log, a .mem file, is then still there) or from a
// compaction. A crash can leave a compaction's tables with no .mem file:
// DropPrefix (FLUSHDB) and Badger's Close flush the memtables, deleting
// their logs, and only then wait for the compactions under way. So an
// unlisted table means lost MANIFEST records only when the directory was
// closed cleanly: no .mem file, and no RunningFile (the store removes it
// once Close has synced and closed everything).
func checkBadgerFiles(dir string, names []string) error {
	var tables []uint64
	hasMem, hasData := false, false
	for _, n := range names {
		switch filepath.Ext(n) {
		case ".sst":
			id, err := strconv.ParseUint(strings.TrimSuffix(n, ".sst"), 10, 64)
			if err == nil {
				tables = append(tables, id)
			}
			hasData = true
		case ".mem":
			hasMem, hasData = true, true
		case ".vlog":
			hasData = true
		}
	}
	if !slices.Contains(names, "MANIFEST") {
		if hasData {
			return fmt.Errorf("%w: %s has database files (%s) but no MANIFEST; Badger would start empty "+
				"beside them: refusing to start (restore from a backup, or recover the MANIFEST)",
				ErrCorruptDir, dir, list(names))
		}
		return nil
	}
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorruptDir, dir, err)
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	if err != nil {
		return fmt.Errorf("%w: %s: MANIFEST unreadable: %v; refusing to start (restore from a backup)",
			ErrCorruptDir, dir, err)
	}
	var missing, unlisted []string
	for id := range m.Tables {
		if !slices.Contains(tables, id) {
			missing = append(missing, fmt.Sprintf("%06d.sst", id))
		}
	}
	for _, id := range tables {
		if _, ok := m.Tables[id]; !ok {
			unlisted = append(unlisted, fmt.Sprintf("%06d.sst", id))
		}
	}
	slices.Sort(missing)
	slices.Sort(unlisted)
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s: tables listed in the MANIFEST are missing (%s); refusing to start "+
			"(restore from a backup)", ErrCorruptDir, dir, list(missing))
	}
	crashed := slices.Contains(names, RunningFile)
	if len(unlisted) > 0 && !hasMem && !crashed {
		return fmt.Errorf("%w: %s: the MANIFEST does not list tables that are on disk (%s) and no "+
			"write-ahead log is left to rebuild them; Badger would delete them: refusing to start "+
			"(the MANIFEST was truncated or replaced; restore from a backup)", ErrCorruptDir, dir, list(unlisted))
	}
	return nil
}

// removeEmptyLogs deletes the empty (zero-byte) memtable and value logs
// (.mem, .vlog) in dir and returns their names. Badger deletes a log by
// truncating it to zero bytes, then closing and removing it, and creates
// one before it sizes it, so a crash in between leaves an empty file; its
// Open then fails on it for good (dgraph-io/badger#2207). An empty log
// holds nothing: a memtable's is deleted once its table is recorded, a
// value log once its values were moved, and a new one had none yet.
// A store that holds dir open may be sizing a new log: then nothing is
// removed, and Badger's Open fails on its lock.
func removeEmptyLogs(dir string) ([]string, error) {
	unlock, ok := lockDir(dir)
	if !ok {
		return nil, nil
	}
	defer unlock()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read data dir %s: %w", dir, err)
	}
	var removed []string
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); !e.Type().IsRegular() || (ext != ".mem" && ext != ".vlog") {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, err
		}
		if fi.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	if len(removed) > 0 {
		return removed, syncDir(dir)
	}
	return nil, nil
}

// writeMarker marks dir as oncekv's, of the given format, durably.
func writeMarker(dir string, format int) error {
	path := filepath.Join(dir, MarkerFile)
	tmp := filepath.Join(dir, markerTmp)
	if err := writeFileSync(tmp, markerText(format)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// markRunning puts RunningFile in dir, synced, holding the boot's ID.
func markRunning(dir string) error {
	if err := writeFileSync(filepath.Join(dir, RunningFile), []byte(bootID())); err != nil {
		return err
	}
	return syncDir(dir)
}

// lostPower reports whether the store in dir was not closed (its
// RunningFile is there) and the machine has booted since it was opened,
// or may have: a process that dies leaves what it wrote in the kernel's
// page cache, which a power loss or a reboot does not.
func lostPower(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, RunningFile))
	if err != nil {
		return false // closed (or never opened by a build that marks it)
	}
	id := bootID()
	return id == "" || string(b) != id
}

// bootID identifies the running boot of the machine (Linux), or is "".
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// list shows at most a few names.
func list(names []string) string {
	const most = 6
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:most], ", ") + fmt.Sprintf(", … %d more", len(names)-most)
}

func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
