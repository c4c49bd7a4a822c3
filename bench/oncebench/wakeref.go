package main

// Reference wake-ups on redis-server: how fast Redis itself delivers one
// command's result to many blocked clients, measured the way oncekv's
// wake-up is (same reader, same rounds), so that oncekv's figure can be
// told apart from the cost any server pays to write a reply to each of N
// sockets:
//
//	publish: N connections SUBSCRIBEd to one channel (all confirmed, and
//	         PUBSUB NUMSUB says N), the runner sends PUBLISH channel answer;
//	blpop:   N connections in BLPOP key 0 on one list (INFO clients counts
//	         all N blocked), the runner sends one RPUSH key with N copies
//	         of the answer: one key and one command wake them all, as
//	         ONCE.COMPLETE does, and each gets the same reply.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The reference wake-ups of redis-server, GET polling, and the floors with
// no server and with no network (floor.go).
const (
	refPoll       = "poll"
	refPublish    = "publish"
	refBlpop      = "blpop"
	refLoopback   = "loopback"
	refGoroutines = "goroutines"
)

var allWakeRefs = []string{refPublish, refBlpop, refPoll, refLoopback, refGoroutines}

// messageReply is the RESP2 push a subscriber of channel gets for
// PUBLISH channel answer.
func messageReply(channel, answer string) []byte {
	return fmt.Appendf(nil, "*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(channel), channel, len(answer), answer)
}

// blpopReply is the RESP2 reply of BLPOP key 0 woken by a push of answer.
func blpopReply(key, answer string) []byte {
	return fmt.Appendf(nil, "*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(answer), answer)
}

// checkSubReply checks a SUBSCRIBE or UNSUBSCRIBE confirmation:
// [kind, channel, count].
func checkSubReply(r reply, kind, channel string, count int64) error {
	if r.Kind != '*' || len(r.Arr) != 3 || r.Arr[0].Str != kind || r.Arr[1].Str != channel || r.Arr[2].Kind != ':' || r.Arr[2].N != count {
		return fmt.Errorf("%s %s: reply %v, want [%s, %s, %d]", strings.ToUpper(kind), channel, r, kind, channel, count)
	}
	return nil
}

// publishWakeRound measures one round of the PUBLISH reference: every
// connection of ws subscribes to channel (confirmations read, and
// PUBSUB NUMSUB checked), then run publishes answer. It returns, per
// subscriber, the time from just before PUBLISH was written to the
// arrival of its message, as seen by the reader named; the subscribers
// are unsubscribed again at the end, so ws can serve other rounds.
func publishWakeRound(run *conn, ws []*conn, channel, answer string, timeout time.Duration, reader string) ([]time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for _, w := range ws {
		if err := w.SetDeadline(deadline); err != nil {
			return nil, err
		}
		if err := w.Send("SUBSCRIBE", channel); err != nil {
			return nil, err
		}
	}
	for _, w := range ws {
		r, err := w.Read()
		if err != nil {
			return nil, err
		}
		if err := checkSubReply(r, "subscribe", channel, 1); err != nil {
			return nil, err
		}
	}
	r, err := run.Do("PUBSUB", "NUMSUB", channel)
	if err != nil {
		return nil, err
	}
	if r.Kind != '*' || len(r.Arr) != 2 || r.Arr[1].N != int64(len(ws)) {
		return nil, fmt.Errorf("PUBSUB NUMSUB %s: %v, want %d subscribers", channel, r, len(ws))
	}
	lat, err := timedWake(ws, messageReply(channel, answer), reader, deadline, func() error {
		r, err := run.Do("PUBLISH", channel, answer)
		if err == nil && (r.Kind != ':' || r.N != int64(len(ws))) {
			err = fmt.Errorf("PUBLISH %s: %v, want %d receivers", channel, r, len(ws))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("subscribers of %s: %w", channel, err)
	}
	for _, w := range ws {
		if err := w.Send("UNSUBSCRIBE", channel); err != nil {
			return nil, err
		}
	}
	for _, w := range ws {
		r, err := w.Read()
		if err != nil {
			return nil, err
		}
		if err := checkSubReply(r, "unsubscribe", channel, 0); err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// blockedClients returns INFO clients' blocked_clients.
func blockedClients(c *conn) (int, error) {
	r, err := c.Do("INFO", "clients")
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(r.Str, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "blocked_clients:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO clients: no blocked_clients in %v", r)
}

// blpopWakeRound measures one round of the BLPOP reference: every
// connection of ws sends BLPOP key 0 (INFO clients is polled until all
// are blocked), then run sends RPUSH key with one copy of answer per
// waiter. It returns, per waiter, the time from just before RPUSH was
// written to the arrival of its reply, as seen by the reader named.
func blpopWakeRound(run *conn, ws []*conn, key, answer string, timeout time.Duration, reader string) ([]time.Duration, error) {
	deadline := time.Now().Add(timeout)
	base, err := blockedClients(run)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		if err := w.SetDeadline(deadline); err != nil {
			return nil, err
		}
		if err := w.Send("BLPOP", key, "0"); err != nil {
			return nil, err
		}
	}
	for {
		n, err := blockedClients(run)
		if err != nil {
			return nil, err
		}
		if n == base+len(ws) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("BLPOP %s: %d clients blocked after the timeout, want %d", key, n, base+len(ws))
		}
		time.Sleep(200 * time.Microsecond)
	}
	push := make([]string, 0, 2+len(ws))
	push = append(push, "RPUSH", key)
	for range ws {
		push = append(push, answer)
	}
	lat, err := timedWake(ws, blpopReply(key, answer), reader, deadline, func() error {
		r, err := run.Do(push...)
		if err == nil && (r.Kind != ':' || r.N != int64(len(ws))) {
			err = fmt.Errorf("RPUSH %s: %v, want %d", key, r, len(ws))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("BLPOP waiters on %s: %w", key, err)
	}
	return lat, nil
}
