package badgerdb

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// The presence filter spares a command on a new key Badger's lookup: it
// is a Bloom filter of every keyspace key that Badger may hold, consulted
// when memory does not hold the key. Badger's lookup of a missing key
// searches each memtable's skiplist and each level (its own Bloom filters
// only skip tables), and a new key's write needs that answer (did it
// exist, with which deadline): under a load of fresh keys (idempotency
// keys, ONCE.CLAIM) it cost 6-9% of the server's CPU and an eighth of
// the bytes allocated. With the filter, a claim+complete cycle costs the
// server 11% less CPU (56 against 63 µs, 50 go-redis clients).
//
// The filter must never miss a key that Badger holds; it may claim keys
// that Badger does not (a false positive costs the lookup it would have
// cost anyway). So:
//   - every put staged is added (stage, under omu), before it can reach
//     Badger, but for a rewrite of a key that memory holds, not deleted:
//     that key is in the filter already, since it was added when staged,
//     or it came from Badger, which the filter covers; and in a filter
//     being rebuilt too, which takes the dirty keys in memory, then a
//     snapshot of Badger that holds the clean ones, and every key staged
//     new meanwhile. (INCR -P 16 over 100k keys: 3% of server CPU was
//     these adds.)
//   - the first filter is made at Open, and countKeys adds every key of
//     the snapshot it counts, which holds everything written before Open;
//     the filter is used once that count is done (ready);
//   - deleted keys stay in the filter, so a store whose keys come and go
//     would fill it: once it has taken twice the keys it was sized for,
//     a new one, sized for 1.25 times the keys there are, is built
//     (rebuildPresence) from the keys in memory and a scan of a snapshot
//     taken after them, while stage adds to both.

const (
	// presenceBitsPerKey and presenceProbes give about 2.5% false
	// positives at the size a filter is made for, and about 15% at twice
	// that, when it is rebuilt (TestPresenceFalsePositives).
	presenceBitsPerKey = 8
	presenceProbes     = 4
	// presenceMinKeys is the smallest filter, in keys (64 KiB).
	presenceMinKeys = 1 << 16
	// presenceBlockBits is a block's size: a key's probes all fall in one
	// block of one cache line, so a lookup costs one cache miss.
	presenceBlockBits = 512
)

type presenceBlock [presenceBlockBits / 64]uint64

// presence is a blocked Bloom filter of raw keys, safe for concurrent
// use.
type presence struct {
	seed   maphash.Seed
	blocks []presenceBlock
	// capacity is the number of keys the filter was sized for.
	capacity int64
	// fresh counts the adds that set a bit: the distinct keys added, but
	// for the few that were false positives already.
	fresh atomic.Int64
	// ready says that the filter holds every key Badger holds: until
	// then, a key it lacks may still be in Badger.
	ready atomic.Bool
}

// newPresence is an empty filter sized for keys keys, and minKeys at
// least.
func newPresence(keys, minKeys int64) *presence {
	keys = max(keys, minKeys, 1)
	n := (keys*presenceBitsPerKey + presenceBlockBits - 1) / presenceBlockBits
	p := &presence{seed: maphash.MakeSeed(), capacity: keys}
	p.blocks = presenceBlocks(p, n)
	return p
}

// probe is the block of key and the hash its probes are taken from.
func (p *presence) probe(key []byte) (*presenceBlock, uint64) {
	h := maphash.Bytes(p.seed, key)
	// The block from the hash's high bits (a multiply, not a modulo),
	// the probes from its low ones.
	i, _ := bits.Mul64(h, uint64(len(p.blocks)))
	return &p.blocks[i], h
}

// add records key.
func (p *presence) add(key []byte) {
	b, h := p.probe(key)
	set := false
	for range presenceProbes {
		bit := h % presenceBlockBits
		h /= presenceBlockBits
		m := uint64(1) << (bit % 64)
		if atomic.OrUint64(&b[bit/64], m)&m == 0 {
			set = true
		}
	}
	if set {
		p.fresh.Add(1)
	}
	runtime.KeepAlive(p) // see mayHave
}

// mayHave reports whether key may have been added; false is certain.
func (p *presence) mayHave(key []byte) bool {
	b, h := p.probe(key)
	// b points outside the Go heap (presenceBlocks), so it does not keep
	// p alive: p must stay reachable until the last read, or a filter
	// just replaced could be unmapped under it (a fault, or zeros: a
	// key reported absent).
	defer runtime.KeepAlive(p)
	for range presenceProbes {
		bit := h % presenceBlockBits
		h /= presenceBlockBits
		if atomic.LoadUint64(&b[bit/64])&(uint64(1)<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

// full reports whether the filter has taken twice the keys it was sized
// for, when its false positives pass 15%.
func (p *presence) full() bool { return p.fresh.Load() > 2*p.capacity }

// bytes is the filter's size.
func (p *presence) bytes() int64 { return int64(len(p.blocks)) * presenceBlockBits / 8 }

// tableKeys is the number of entries in Badger's tables, all spaces,
// versions and deletions included: what the first filter is sized for,
// since the keys are counted after it is made.
func tableKeys(bdb *badger.DB) int64 {
	var n int64
	for _, t := range bdb.Tables() {
		n += int64(t.KeyCount)
	}
	return n
}

// addPresenceLocked adds a keyspace key that a put stages. Called with
// omu held.
func (s *DB) addPresenceLocked(key []byte) {
	p := s.pres.Load()
	p.add(key)
	if s.nextPres != nil {
		s.nextPres.add(key)
	} else if p.ready.Load() && p.full() {
		kickChan(s.rebuildPres)
	}
}

// surelyAbsent reports whether the presence filter rules out that Badger
// holds key.
func (s *DB) surelyAbsent(key []byte) bool {
	if len(key) == 0 || key[0] != spaceKeys {
		return false
	}
	p := s.pres.Load()
	if p == nil || !p.ready.Load() || p.mayHave(key) {
		return false
	}
	s.presSkips.Add(1)
	return true
}

// presenceLoop rebuilds the presence filter when stage finds it full.
func (s *DB) presenceLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.rebuildPres:
			s.rebuildPresence()
		}
	}
}

// rebuildPresence replaces the presence filter with one sized for the
// keys there are now, holding only them.
//
// Every key Badger may hold reaches the new filter: the keys that are
// dirty when it is made are added then, under omu; a key that is not
// dirty then is either absent or committed, and so in the snapshot
// scanned after (the applier makes an entry clean only once Badger
// has its round, refreshSnap); and stage adds every later put to both
// filters until the new one replaces the old.
func (s *DB) rebuildPresence() {
	<-s.counted // base is final
	s.mu.RLock()
	var n int64
	for db := range s.base {
		n += int64(s.base[db] + s.counts[db])
	}
	s.mu.RUnlock()
	np := newPresence(n+n/4, s.presMin)
	s.omu.Lock()
	for _, e := range s.dirty {
		if !e.del && e.key != "" && e.key[0] == spaceKeys {
			np.add([]byte(e.key))
		}
	}
	s.nextPres = np
	s.omu.Unlock()
	done := false
	defer func() {
		s.omu.Lock()
		if done {
			np.ready.Store(true)
			s.pres.Store(np)
		}
		s.nextPres = nil
		// Keys staged during the scan went to np without a check that
		// it was full (addPresenceLocked checks the filter in use): if
		// they filled it, rebuild again now, not at the next write,
		// which may not come.
		full := done && np.full()
		s.omu.Unlock()
		if full {
			kickChan(s.rebuildPres)
		}
	}()
	txn := s.bdb.NewTransaction(false)
	defer txn.Discard()
	if s.presHook != nil {
		s.presHook()
	}
	it := s.newIterator(txn, badger.IteratorOptions{Prefix: []byte{spaceKeys}})
	defer it.Close()
	i := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if i++; i%4096 == 0 && s.closed.Load() {
			return
		}
		s.trimWhileScanning(i)
		np.add(it.Item().Key())
	}
	done = true
	s.log.Debug("presence filter rebuilt", zap.Int64("keys", n), zap.Int64("bytes", np.bytes()))
}

// trimWhileScanning trims the table mappings every 128Ki keys of a scan
// of the whole keyspace (a rebuild, the count), which would otherwise
// map up to a second's worth of tables (hundreds of MiB) between trims.
func (s *DB) trimWhileScanning(i int) {
	if i%(1<<17) == 0 && s.opts.TrimInterval > 0 {
		s.trimTables()
	}
}
