package commands

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sort"
	"sync"
)

// The pages of a sorted set object's score index (zsetobj.go) are
// elements, read back by every rank and written by every change; the
// server keeps each object's list of pages in memory too (zpageCache), so
// that finding a name's page or a rank's is a search in memory, not a
// walk of the engine's keys. The copy in memory is used while it is the
// copy of the set's value as it stands: each write of a set stamps its
// value with a new random number (zref.stamp) and its pages with the
// same, having marked them unstamped (0) before changing the first: a
// write that fails half way, another server's write, or one the store
// did not keep, leaves a stamp the pages do not have, and they are read
// again from the elements.

// zpageCacheMax is how many pages the cache holds at most, of all sets:
// some 40 MB of names of 30 bytes.
const zpageCacheMax = 1 << 20

// zpageCache holds the pages of the objects read or written lately.
type zpageCache struct {
	mu    sync.Mutex
	m     map[uint64]*zpages
	total int // the pages held
}

// zpages is one object's pages, in order, and the stamp of the value
// they are the pages of (0: of none, being changed).
type zpages struct {
	stamp  uint64
	names  [][]byte // each 'f' and its first name; names[0] is zfirstPage
	counts []int64
}

// get is obj's pages if they are those of stamp.
func (c *zpageCache) get(obj, stamp uint64) *zpages {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.m[obj]; p != nil && stamp != 0 && p.stamp == stamp {
		return p
	}
	return nil
}

// put keeps p as obj's pages, making room (at random) if need be.
func (c *zpageCache) put(obj uint64, p *zpages) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uint64]*zpages)
	}
	if old := c.m[obj]; old != nil {
		c.total -= len(old.names)
	}
	for k, q := range c.m {
		if c.total+len(p.names) <= zpageCacheMax {
			break
		}
		c.total -= len(q.names)
		delete(c.m, k)
	}
	c.m[obj] = p
	c.total += len(p.names)
}

// resized notes that obj's pages (in the cache) now number d more.
func (c *zpageCache) resized(d int) {
	c.mu.Lock()
	c.total += d
	c.mu.Unlock()
}

// pages is the object's pages: the cache's, if they are the value's,
// else read from the elements (and cached).
func (r *zref) pages() (*zpages, error) {
	if r.pg != nil {
		return r.pg, nil
	}
	cache := &r.x.S.zpages
	if p := cache.get(r.v.Obj, r.stamp); p != nil {
		r.pg = p
		return p, nil
	}
	p := &zpages{stamp: r.stamp}
	err := r.x.Tx.ScanElems(r.v.Obj, zfirstPage, func(sub, val []byte) (bool, error) {
		if len(sub) < 2 || sub[0] != zPageIdx {
			return false, nil
		}
		c, w := binary.Uvarint(val)
		if w <= 0 || w != len(val) {
			return false, ErrBadObject
		}
		p.names = append(p.names, bytes.Clone(sub))
		p.counts = append(p.counts, int64(c))
		return true, nil
	})
	if err == nil && (len(p.names) == 0 || !bytes.Equal(p.names[0], zfirstPage)) {
		err = ErrBadObject // the first page is always there
	}
	if err != nil {
		return nil, err
	}
	cache.put(r.v.Obj, p)
	r.pg = p
	return p, nil
}

// of is the index of the page that holds name.
func (p *zpages) of(name []byte) int {
	// The first page whose first name is after name, less one.
	i := sort.Search(len(p.names), func(i int) bool { return bytes.Compare(p.names[i][1:], name) > 0 })
	return max(i-1, 0)
}

// before is the number of names on the pages before page i.
func (p *zpages) before(i int) int64 {
	var n int64
	for _, c := range p.counts[:i] {
		n += c
	}
	return n
}

// ofRank is the page that holds rank i (< the set's size), and the number
// of names before it.
func (p *zpages) ofRank(i int64) (int, int64) {
	var before int64
	for k, c := range p.counts {
		if before+c > i {
			return k, before
		}
		before += c
	}
	return len(p.counts) - 1, before - p.counts[len(p.counts)-1]
}

// setPage stores page pg's count.
func (r *zref) setPage(pg []byte, n int64) error {
	return r.x.Tx.SetElem(r.v.Obj, pg, binary.AppendUvarint(nil, uint64(n)))
}

// count adds delta (one name added or removed) to the page of name; a
// page grown past zpageMax is split in two, one shrunk under zpageMin
// joins the one before it.
func (r *zref) count(name []byte, delta int64) error {
	p, err := r.pages()
	if err != nil {
		return err
	}
	p.stamp = 0 // until saveObj stamps the value and them alike
	i := p.of(name)
	n := p.counts[i] + delta
	switch {
	case n > zpageMax:
		return r.splitPage(p, i, n)
	case n < zpageMin && i > 0:
		if err := r.x.Tx.DropElem(r.v.Obj, p.names[i]); err != nil {
			return err
		}
		p.counts[i-1] += n
		p.names = append(p.names[:i], p.names[i+1:]...)
		p.counts = append(p.counts[:i], p.counts[i+1:]...)
		r.x.S.zpages.resized(-1)
		return r.setPage(p.names[i-1], p.counts[i-1])
	}
	p.counts[i] = n
	return r.setPage(p.names[i], n)
}

// splitPage splits page i, of n names now, at its middle name.
func (r *zref) splitPage(p *zpages, i int, n int64) error {
	half := n / 2
	var mid []byte
	k := int64(0)
	err := r.x.Tx.ScanElems(r.v.Obj, r.from(p.names[i][1:]), func(sub, _ []byte) (bool, error) {
		if len(sub) == 0 || sub[0] != zScoreIdx {
			return false, nil
		}
		if k == half {
			mid = append([]byte{zPageIdx}, sub...)
			return false, nil
		}
		k++
		return true, nil
	})
	if err == nil && mid == nil {
		err = ErrBadObject
	}
	if err != nil {
		return err
	}
	p.counts[i] = half
	p.names = append(p.names[:i+1], append([][]byte{mid}, p.names[i+1:]...)...)
	p.counts = append(p.counts[:i+1], append([]int64{n - half}, p.counts[i+1:]...)...)
	r.x.S.zpages.resized(1)
	if err := r.setPage(p.names[i], half); err != nil {
		return err
	}
	return r.setPage(mid, n-half)
}

// newStamp is a value's new stamp: random, never 0.
func newStamp() uint64 { return rand.Uint64() | 1 }
