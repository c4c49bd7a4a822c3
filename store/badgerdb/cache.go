package badgerdb

// The value cache's order: clean entries leave memory in the order they
// became clean (oldest first), not at random.
//
// The order decides how much memory the cache really takes. The Go heap
// never moves an object: a span (a page run of one size class) goes back
// to the OS only once all its objects are dead. An entry and its value
// are allocated when a key is written, so entries made clean together
// sit together in the heap. Evicted at random (in map order), the cache's
// survivors stay scattered over all the spans a load ever filled, each
// span held by a few of them: a standalone model of a 10M-key load into a
// 32 MiB cache (its entries and values, random eviction against this
// order) kept 93 MiB of spans in use for 34 MiB of live objects, against
// 44 MiB for 38 MiB in this order, where the survivors are the newest
// allocations and fill their spans.

// queued is an entry's place in the clean queue, valid while the entry's
// seq is still the one it was queued with.
type queued struct {
	e   *entry
	seq uint64
}

// cleanQueue holds the clean entries of the cache in the order they
// became clean. An entry written again (dirty), dropped from mem, or
// queued again later leaves a stale place behind, skipped when reached
// and swept out when stale places outnumber live ones.
type cleanQueue struct {
	q    []queued
	head int // q[:head] is popped
	seq  uint64
}

// push queues e, which just became clean, behind every other entry.
func (c *cleanQueue) push(e *entry) {
	if c.head > cleanQueueSlack && c.head > len(c.q)/2 {
		// Reuse the popped front rather than grow the slice.
		n := copy(c.q, c.q[c.head:])
		clear(c.q[n:])
		c.q, c.head = c.q[:n], 0
	}
	c.seq++
	e.seq = c.seq
	c.q = append(c.q, queued{e: e, seq: c.seq})
}

// pop returns the oldest place, or false when the queue is empty. The
// caller checks that it is still live (liveLocked).
func (c *cleanQueue) pop() (queued, bool) {
	if c.head == len(c.q) {
		c.q, c.head = c.q[:0], 0
		return queued{}, false
	}
	p := c.q[c.head]
	c.q[c.head] = queued{} // the entry may go as soon as it is evicted
	c.head++
	return p, true
}

// len is the number of places, live or stale, not yet popped.
func (c *cleanQueue) len() int { return len(c.q) - c.head }

// compact keeps only the places live reports, in order, in a slice sized
// to them, so that neither stale places (each holding its entry, and the
// entry its value) nor the capacity of a burst outlive their use.
func (c *cleanQueue) compact(live func(queued) bool) {
	n := 0
	for _, p := range c.q[c.head:] {
		if live(p) {
			n++
		}
	}
	fresh := make([]queued, 0, n+n/4)
	for _, p := range c.q[c.head:] {
		if live(p) {
			fresh = append(fresh, p)
		}
	}
	c.q, c.head = fresh, 0
}

// cleanQueueSlack is how many places, beyond twice the entries in mem,
// the queue may hold before cacheLocked sweeps its stale ones out.
const cleanQueueSlack = 1 << 12

// queuedLive reports whether p may be the place of a clean entry of the
// cache: the entry was queued last with p.seq and is clean. An entry
// dropped from mem has its seq zeroed (dropLocked), so the check needs no
// lookup in mem: a sweep of the queue costs a pass over it, not a map
// lookup per place (which held omu for milliseconds with 100k keys).
func queuedLive(p queued) bool { return p.e.seq == p.seq && p.e.n == 0 }

// liveLocked is queuedLive, checked against mem too: a place that
// eviction acts on must be of the very entry mem holds. Called with omu
// held.
func (s *DB) liveLocked(p queued) bool {
	return queuedLive(p) && s.mem.getString(p.e.key) == p.e
}

// dropLocked deletes e, a clean entry, from mem, and makes its place in
// the queue stale. Called with omu held.
func (s *DB) dropLocked(e *entry) {
	s.mem.del(e.key)
	e.seq = 0
}

// queueCleanLocked queues e, a clean entry now counted in cacheBytes, and
// sweeps the queue when stale places have piled up (keys written again
// and again, or dropped by FLUSHDB). Called with omu held.
func (s *DB) queueCleanLocked(e *entry) {
	s.clean.push(e)
	if s.clean.len() > 2*s.mem.len()+cleanQueueSlack {
		s.clean.compact(queuedLive)
	}
}

// shrinkCleanLocked sweeps the queue when its slice is far larger than
// its places (what a burst leaves), as shrinkMapsLocked does for the
// maps. Called with omu held.
func (s *DB) shrinkCleanLocked() {
	if cap(s.clean.q) > 2*s.clean.len()+cleanQueueSlack {
		s.clean.compact(queuedLive)
	}
}

// evictLocked drops the oldest clean entries until the cache is within
// 90% of its budget, once it is over it. Called with omu held.
func (s *DB) evictLocked() {
	if s.cacheBytes <= s.opts.CacheSize {
		return
	}
	target := s.opts.CacheSize * 9 / 10
	for s.cacheBytes > target {
		p, ok := s.clean.pop()
		if !ok {
			return
		}
		if s.liveLocked(p) {
			s.dropLocked(p.e)
			s.cacheBytes -= p.e.cost()
		}
	}
}
