package badgerdb

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// minBlockCache is the smallest block cache given to Badger where it needs
// one (compressed tables) and the configuration sets none.
const minBlockCache = 1 << 20

// blockCacheSize is the block cache Badger gets: opts.BlockCacheSize (at
// least minBlockCache) where tables are compressed, none where no table
// is, nor will be.
//
// A block of an uncompressed table is read in place, in the table's
// memory map; Badger's cache then only keeps a view of those bytes and
// the offsets it decoded, and costs more than it saves. With 6.3M keys
// and GETs of random keys (redis-benchmark -c 50 -r 10000000, -P 16),
// the cache's admission and bookkeeping took 8-13% of the server's CPU.
// Without it (and without Badger's metrics, badgerOptions), a GET took
// 9.6-11.5 µs of server CPU against 11.5-15.0, at 127-149k requests/s
// against 107-137k; unpipelined, 34-40 µs against 42-46, at 33-37k
// requests/s against 29-32k (five alternations).
//
// A compressed block is decompressed into a new buffer on every miss, so
// compressed tables keep the cache, and so do the compressed tables a
// store wrote before it was reopened with compression off (each table
// keeps its own compression, tablesCompressed).
func blockCacheSize(opts Options) int64 {
	if compressions[opts.Compression] == options.None && !tablesCompressed(opts.Dir) {
		return 0
	}
	return max(opts.BlockCacheSize, minBlockCache)
}

// tablesCompressed reports whether any table of the Badger store in dir
// is compressed, from its manifest. A store with no manifest yet has no
// table; a manifest that cannot be read counts as compressed, keeping the
// cache (Badger's Open reports what is wrong with it).
func tablesCompressed(dir string) bool {
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		return true
	}
	for _, t := range m.Tables {
		if t.Compression != options.None {
			return true
		}
	}
	return false
}
