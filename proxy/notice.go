package proxy

// Notices to the ONCE engine. A running ONCE record is a key like any
// other: a DEL, UNLINK, FLUSHDB or FLUSHALL forwarded by the proxy can
// remove it, and its waiters (on every proxy) should then take it over at
// once, as at a lapse, instead of at its lease deadline. The session
// queues a notice for each such command that removed something; one
// worker hands them to the engine (Touched: one SPUBLISH per key, a batch
// per pipeline; Flushed: one broadcast). The queue is bounded: when it is
// full the notice is dropped and counted, and the waiters fall back on
// their lease deadline, which they check anyway.

import (
	"context"
	"time"
)

// toucher is implemented by a OnceHandler that wants to hear of keys
// removed by other commands (onceup.Engine).
type toucher interface {
	Touched(ctx context.Context, db int, keys ...[]byte) error
	Flushed(ctx context.Context, db int) error
}

const (
	// noticeQueue bounds the notices waiting for the worker.
	noticeQueue = 4096
	// noticeBatch bounds the keys the worker hands over in one call.
	noticeBatch = 256
	// maxTouched bounds the keys of one command that are announced.
	maxTouched = 64
	// noticeTimeout bounds one call to the engine.
	noticeTimeout = 2 * time.Second
)

// notice is a removal to announce: keys of database db, or with flush,
// every key of db (-1: of every database).
type notice struct {
	db    int
	keys  [][]byte
	flush bool
}

// notify queues a notice for the worker; when the queue is full, it is
// dropped (counted in proxy_once_notices_dropped).
func (p *Proxy) notify(n notice) {
	if p.notices == nil {
		return
	}
	select {
	case p.notices <- n:
	default:
		p.stats.noticesDropped.Add(1)
	}
}

// noticeWorker hands the queued notices to the engine until the proxy
// closes: the keys of consecutive notices of one database go in one call.
func (p *Proxy) noticeWorker(t toucher) {
	defer close(p.noticesDone)
	for {
		var n notice
		select {
		case <-p.stop:
			return
		case n = <-p.notices:
		}
		batch := []notice{n}
	drain:
		for len(batch) < noticeBatch {
			select {
			case m := <-p.notices:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		for i := 0; i < len(batch); {
			ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
			if batch[i].flush {
				_ = t.Flushed(ctx, batch[i].db)
				cancel()
				p.stats.noticesSent.Add(1)
				i++
				continue
			}
			db, keys := batch[i].db, batch[i].keys
			j := i + 1
			for ; j < len(batch) && !batch[j].flush && batch[j].db == db; j++ {
				keys = append(keys[:len(keys):len(keys)], batch[j].keys...)
			}
			_ = t.Touched(ctx, db, keys...)
			cancel()
			p.stats.noticesSent.Add(int64(j - i))
			i = j
		}
	}
}

// noteWrite queues a notice when a forwarded command that removes keys
// removed some: DEL or UNLINK answering a count above 0, FLUSHDB or
// FLUSHALL answering +OK. reply is the upstream's raw reply; db the
// database the command ran in.
func (p *Proxy) noteWrite(db int, args [][]byte, reply []byte) {
	if p.notices == nil || len(reply) < 3 || len(args[0]) < 3 || len(args[0]) > 8 {
		return
	}
	var buf [8]byte
	name := lower(buf[:0], args[0]) // compared without allocating
	switch {
	case string(name) == "del" || string(name) == "unlink":
		if reply[0] != ':' || reply[1] == '0' || reply[1] == '-' || len(args) < 2 {
			return
		}
		p.notify(notice{db: db, keys: args[1:min(len(args), 1+maxTouched)]})
	case string(name) == "flushdb" || string(name) == "flushall":
		if !isOK(reply) {
			return
		}
		if string(name) == "flushall" {
			db = -1
		}
		p.notify(notice{db: db, flush: true})
	}
}
