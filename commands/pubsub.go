package commands

import (
	"slices"
	"sync"

	"github.com/oncekv/oncekv/resp"
)

// Pub/Sub, as Redis 7.0 does it: SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE and
// their UNSUBSCRIBEs, PUBLISH and SPUBLISH, PUBSUB. A subscribed client
// gets its messages as pushes (resp's Conn.Push): another connection's
// PUBLISH encodes them into the subscriber's outbox, which its own
// goroutine sends at once, bounded by client-output-buffer-limit pubsub.
// Shard channels are plain channels of their own namespace here (one
// server, no cluster), as in a standalone Redis.

// subKind is the kind of a subscription.
type subKind int

const (
	subChannel subKind = iota
	subPattern
	subShard
	nkinds
)

// subWords are the words of each kind's replies and messages.
var subWords = [nkinds]struct{ sub, unsub, message string }{
	{"subscribe", "unsubscribe", "message"},
	{"psubscribe", "punsubscribe", "pmessage"},
	{"ssubscribe", "sunsubscribe", "smessage"},
}

// pubsubRegistry is who subscribed to what.
type pubsubRegistry struct {
	mu sync.RWMutex
	// subs are the subscribers of each channel (pattern, shard
	// channel), in the order they subscribed.
	subs [nkinds]map[string][]*resp.Conn
	// conns are each subscribed connection's subscriptions.
	conns map[*resp.Conn]*connSubs
}

// connSubs is one connection's subscriptions of each kind, in the order
// it made them.
type connSubs [nkinds][]string

func (cs *connSubs) total() int { return len(cs[subChannel]) + len(cs[subPattern]) + len(cs[subShard]) }

// count is the number SUBSCRIBE's (or SSUBSCRIBE's) replies carry: the
// channels and patterns (or the shard channels) of the connection.
func (cs *connSubs) count(k subKind) int64 {
	if cs == nil {
		return 0
	}
	if k == subShard {
		return int64(len(cs[subShard]))
	}
	return int64(len(cs[subChannel]) + len(cs[subPattern]))
}

// add subscribes c; it reports c's count afterwards.
func (r *pubsubRegistry) add(c *resp.Conn, k subKind, name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		r.conns = make(map[*resp.Conn]*connSubs)
		for i := range r.subs {
			r.subs[i] = make(map[string][]*resp.Conn)
		}
	}
	cs := r.conns[c]
	if cs == nil {
		cs = new(connSubs)
		r.conns[c] = cs
	}
	if !slices.Contains(cs[k], name) {
		cs[k] = append(cs[k], name)
		r.subs[k][name] = append(r.subs[k][name], c)
	}
	return cs.count(k)
}

// remove unsubscribes c; it reports c's count afterwards and its total
// of subscriptions of every kind.
func (r *pubsubRegistry) remove(c *resp.Conn, k subKind, name string) (count int64, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(c, k, name)
	cs := r.conns[c]
	if cs == nil {
		return 0, 0
	}
	return cs.count(k), cs.total()
}

func (r *pubsubRegistry) removeLocked(c *resp.Conn, k subKind, name string) {
	cs := r.conns[c]
	if cs == nil {
		return
	}
	i := slices.Index(cs[k], name)
	if i < 0 {
		return
	}
	cs[k] = slices.Delete(cs[k], i, i+1)
	list := r.subs[k][name]
	if j := slices.Index(list, c); j >= 0 {
		list = slices.Delete(list, j, j+1)
	}
	if len(list) == 0 {
		delete(r.subs[k], name)
	} else {
		r.subs[k][name] = list
	}
	if cs.total() == 0 {
		delete(r.conns, c)
	}
}

// names is a copy of c's subscriptions of kind k.
func (r *pubsubRegistry) names(c *resp.Conn, k subKind) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if cs := r.conns[c]; cs != nil {
		return slices.Clone(cs[k])
	}
	return nil
}

// counts are c's subscriptions of each kind (CLIENT LIST).
func (r *pubsubRegistry) counts(c *resp.Conn) (n [nkinds]int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if cs := r.conns[c]; cs != nil {
		for k := range n {
			n[k] = len(cs[k])
		}
	}
	return n
}

// dropAll forgets every subscription of c (RESET, a disconnect).
func (r *pubsubRegistry) dropAll(c *resp.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.conns[c]
	if cs == nil {
		return
	}
	for k := range cs {
		for _, name := range slices.Clone(cs[k]) {
			r.removeLocked(c, subKind(k), name)
		}
	}
}

// active is how many channels (patterns, shard channels) have a
// subscriber (INFO, PUBSUB NUMPAT).
func (r *pubsubRegistry) active(k subKind) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.subs[k])
}

// numsub is the number of subscribers of each name.
func (r *pubsubRegistry) numsub(k subKind, names [][]byte) []int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = len(r.subs[k][string(n)])
	}
	return out
}

// list is the channels of kind k with a subscriber matching pattern (all
// when pattern is nil).
func (r *pubsubRegistry) list(k subKind, pattern []byte) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for name := range r.subs[k] {
		if pattern == nil || globMatch(pattern, []byte(name)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// publish sends msg on channel to its subscribers (of kind subChannel
// and then the patterns matching it, in byte order, or of subShard), and
// returns how many received it, counted as Redis counts them: once per
// subscription. A
// message to self is written to its own replies (its PUBLISH's reply
// comes after it, as in Redis); to another connection, it is pushed.
func (r *pubsubRegistry) publish(self *resp.Conn, k subKind, channel, msg []byte) int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var n int64
	deliver := func(c *resp.Conn, fn func(w *resp.Writer)) {
		n++
		if c == self {
			c.PushSelf(fn)
			return
		}
		c.Push(fn)
	}
	word := subWords[k].message
	plain := func(w *resp.Writer) {
		w.Push(3)
		w.BulkString(word)
		w.Bulk(channel)
		w.Bulk(msg)
	}
	for _, c := range r.subs[k][string(channel)] {
		deliver(c, plain)
	}
	if k != subChannel {
		return n
	}
	// The patterns that match, in byte order, so that a channel several
	// match gets their messages in the same order every time (Redis:
	// its hash table's, as for PUBSUB CHANNELS).
	var pats []string
	for pat := range r.subs[subPattern] {
		if globMatch([]byte(pat), channel) {
			pats = append(pats, pat)
		}
	}
	slices.Sort(pats)
	for _, pat := range pats {
		conns := r.subs[subPattern][pat]
		fn := func(w *resp.Writer) {
			w.Push(4)
			w.BulkString("pmessage")
			w.BulkString(pat)
			w.Bulk(channel)
			w.Bulk(msg)
		}
		for _, c := range conns {
			deliver(c, fn)
		}
	}
	return n
}

func pubsubCommands() []*Command {
	flags := Pubsub | NoScript | Loading | Stale
	pubsub := []string{"pubsub", "slow"}
	sub := func(name string, arity int, f Flags, run Handler) *Command {
		return &Command{Name: "pubsub|" + name, Arity: arity, Flags: f, Categories: pubsub, Run: run}
	}
	return []*Command{
		{Name: "subscribe", Arity: -2, Flags: flags, Categories: pubsub, Run: subscribeCmd(subChannel)},
		{Name: "psubscribe", Arity: -2, Flags: flags, Categories: pubsub, Run: subscribeCmd(subPattern)},
		{Name: "ssubscribe", Arity: -2, Flags: flags, FirstKey: 1, LastKey: -1, Categories: pubsub, Run: subscribeCmd(subShard)},
		{Name: "unsubscribe", Arity: -1, Flags: flags, Categories: pubsub, Run: unsubscribeCmd(subChannel)},
		{Name: "punsubscribe", Arity: -1, Flags: flags, Categories: pubsub, Run: unsubscribeCmd(subPattern)},
		{Name: "sunsubscribe", Arity: -1, Flags: flags, FirstKey: 1, LastKey: -1, Categories: pubsub, Run: unsubscribeCmd(subShard)},
		{Name: "publish", Arity: 3, Flags: Pubsub | Loading | Stale | Fast, Categories: []string{"pubsub", "fast"}, Run: publishCmd(subChannel)},
		{Name: "spublish", Arity: 3, Flags: Pubsub | Loading | Stale | Fast, FirstKey: 1, LastKey: 1, Categories: []string{"pubsub", "fast"}, Run: publishCmd(subShard)},
		{Name: "pubsub", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
			sub("channels", -2, Pubsub|Loading|Stale, pubsubChannels(subChannel)),
			sub("numsub", -2, Pubsub|Loading|Stale, pubsubNumsub(subChannel)),
			sub("numpat", 2, Pubsub|Loading|Stale, pubsubNumpat),
			sub("shardchannels", -2, Pubsub|Loading|Stale, pubsubChannels(subShard)),
			sub("shardnumsub", -2, Pubsub|Loading|Stale, pubsubNumsub(subShard)),
			{Name: "pubsub|help", Arity: 2, Flags: Loading | Stale, Categories: []string{"slow"}, Run: pubsubHelp},
		}},
	}
}

// allowedSubscribed reports whether a RESP2 client in the Pub/Sub context
// may run cmd (Redis 7.0's processCommand).
func allowedSubscribed(cmd *Command) bool {
	switch cmd.Name {
	case "ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe", "quit", "reset":
		return true
	}
	return false
}

// errSubscribed is the error a RESP2 subscribed client gets for any other
// command, in Redis 7.0's words.
func errSubscribed(cmd *Command) string {
	return "ERR Can't execute '" + cmd.Name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// subReply writes a (un)subscribe confirmation; a nil name is Redis's
// reply to an UNSUBSCRIBE with nothing to unsubscribe. It is a push: sent
// even under CLIENT REPLY OFF or SKIP, as in Redis 7.0.
func subReply(x *Ctx, word string, name []byte, count int64) {
	x.WritePush(func(w *resp.Writer) {
		w.Push(3)
		w.BulkString(word)
		if name == nil {
			w.Null()
		} else {
			w.Bulk(name)
		}
		w.Int(count)
	})
}

func subscribeCmd(k subKind) Handler {
	return func(x *Ctx) {
		// The messages queued before go first.
		x.SyncPushes()
		x.TakePushes()
		for _, name := range x.Args[1:] {
			n := x.S.pubsub.add(x.Conn, k, string(name))
			subReply(x, subWords[k].sub, name, n)
		}
		x.SetSubscribed(true)
	}
}

func unsubscribeCmd(k subKind) Handler {
	return func(x *Ctx) {
		x.SyncPushes()
		names := x.Args[1:]
		if len(names) == 0 {
			for _, n := range x.S.pubsub.names(x.Conn, k) {
				names = append(names, []byte(n))
			}
			if len(names) == 0 {
				subReply(x, subWords[k].unsub, nil, x.S.pubsub.countOf(x.Conn, k))
				return
			}
		}
		total := 0
		for _, name := range names {
			var n int64
			n, total = x.S.pubsub.remove(x.Conn, k, string(name))
			// A message of name pushed as it was removed comes before
			// its confirmation, not after.
			x.SyncPushes()
			subReply(x, subWords[k].unsub, name, n)
		}
		if total == 0 {
			// Out of the Pub/Sub context once no subscription of any
			// kind is left, as in Redis 7.0.
			x.SetSubscribed(false)
		}
	}
}

// countOf is c's count for kind k's replies.
func (r *pubsubRegistry) countOf(c *resp.Conn, k subKind) int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.conns[c].count(k)
}

func publishCmd(k subKind) Handler {
	return func(x *Ctx) {
		x.W.Int(x.S.pubsub.publish(x.Conn, k, x.Args[1], x.Args[2]))
	}
}

func pubsubChannels(k subKind) Handler {
	return func(x *Ctx) {
		if len(x.Args) > 3 {
			subcommandSyntax(x)
			return
		}
		var pat []byte
		if len(x.Args) == 3 {
			pat = x.Args[2]
		}
		names := x.S.pubsub.list(k, pat)
		x.W.Array(len(names))
		for _, n := range names {
			x.W.BulkString(n)
		}
	}
}

func pubsubNumsub(k subKind) Handler {
	return func(x *Ctx) {
		names := x.Args[2:]
		counts := x.S.pubsub.numsub(k, names)
		x.W.Array(2 * len(names))
		for i, n := range names {
			x.W.Bulk(n)
			x.W.Int(int64(counts[i]))
		}
	}
}

func pubsubNumpat(x *Ctx) { x.W.Int(int64(x.S.pubsub.active(subPattern))) }

func pubsubHelp(x *Ctx) {
	lines := []string{
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		"HELP",
		"    Prints this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}
