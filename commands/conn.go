package commands

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oncekv/oncekv/resp"
)

func connCommands() []*Command {
	conn := func(c ...string) []string { return append([]string{"connection"}, c...) }
	base := NoScript | Loading | Stale
	sub := func(name string, arity int, flags Flags, run Handler) *Command {
		return &Command{Name: "client|" + name, Arity: arity, Flags: flags | base, Categories: conn("slow"), Run: run}
	}
	admin := func(c *Command) *Command {
		c.Categories = []string{"admin", "slow", "dangerous", "connection"}
		return c
	}
	return []*Command{
		{Name: "ping", Arity: -1, Flags: Fast | Borrows, Categories: conn("fast"), Run: pingCmd},
		{Name: "echo", Arity: 2, Flags: Loading | Stale | Fast | Borrows, Categories: conn("fast"), Run: echoCmd},
		{Name: "quit", Arity: -1, Flags: AtOnce | AllowBusy | NoScript | Loading | Stale | Fast | NoAuth, Categories: conn("fast"), Run: quitCmd},
		{Name: "select", Arity: 2, Flags: Loading | Stale | Fast, Categories: conn("fast"), Run: selectCmd},
		{Name: "hello", Arity: -1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: conn("fast"), Run: helloCmd},
		{Name: "auth", Arity: -2, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: conn("fast"), Run: authCmd},
		{Name: "reset", Arity: 1, Flags: AtOnce | NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: conn("fast"), Run: resetCmd},
		{Name: "client", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
			sub("setname", 3, 0, clientSetname),
			sub("getname", 2, 0, clientGetname),
			sub("id", 2, 0, clientID),
			sub("setinfo", 4, 0, clientSetinfo),
			sub("info", 2, 0, clientInfo),
			admin(sub("list", -2, Admin, clientList)),
			admin(sub("kill", -3, Admin, clientKill)),
			admin(sub("pause", -3, Admin, clientPause)),
			admin(sub("unpause", 2, Admin, clientUnpause)),
			admin(sub("unblock", -3, Admin, clientUnblock)),
			admin(sub("no-evict", 3, Admin, clientOnOff)),
			sub("no-touch", 3, 0, clientOnOff),
			sub("reply", 3, 0, clientReply),
			clientHelpCommand(sub("help", 2, 0, clientHelp)),
		}},
	}
}

func pingCmd(x *Ctx) {
	// As in Redis 7: a server that refuses writes (a full disk) answers
	// PING -MISCONF, before its argument count is checked. Not in EXEC:
	// Redis refuses PING in processCommand, which EXEC's commands do not
	// go through (it was checked as it was queued).
	if err := x.S.writesRefused(x.Cmd); err != nil && !x.InExec {
		x.Fail(err)
		return
	}
	if x.W.Proto == 2 && x.Subscribed() && len(x.Args) <= 2 {
		// In the Pub/Sub context, as in Redis 7.0: ["pong", arg].
		x.W.Array(2)
		x.W.BulkString("pong")
		if len(x.Args) == 2 {
			x.W.Bulk(x.Args[1])
		} else {
			x.W.BulkString("")
		}
		return
	}
	switch len(x.Args) {
	case 1:
		x.W.Simple("PONG")
	case 2:
		x.W.Bulk(x.Args[1])
	default:
		x.W.Error("ERR wrong number of arguments for 'ping' command")
	}
}

func echoCmd(x *Ctx) { x.W.Bulk(x.Args[1]) }

// quitCmd is QUIT. The connection's subscriptions go before the reply,
// not when its goroutine later sees it closed: a client that reads +OK
// and then asks PUBSUB NUMSUB on another connection gets Redis's answer,
// which frees the client before it serves the next event.
func quitCmd(x *Ctx) {
	x.S.pubsub.dropAll(x.Conn)
	x.W.OK()
	x.CloseAfterReply()
}

func selectCmd(x *Ctx) {
	n, ok := parseInt(x.Args[1])
	if !ok {
		x.Fail(ErrNotInteger)
		return
	}
	if n != int64(int32(n)) {
		x.W.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
		return
	}
	if n < 0 || n >= int64(x.S.store.Databases()) {
		x.Fail(ErrDBIndex)
		return
	}
	x.Select(int(n))
	x.W.OK()
}

// authenticate checks a user/password pair for the default user.
func (x *Ctx) authenticate(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	if x.S.requirePass() == "" {
		return true
	}
	return x.S.checkPassword(pass)
}

func authCmd(x *Ctx) {
	var user, pass []byte
	switch len(x.Args) {
	case 2:
		if x.S.requirePass() == "" {
			x.Fail(ErrNoPassSet)
			return
		}
		user, pass = []byte("default"), x.Args[1]
	case 3:
		user, pass = x.Args[1], x.Args[2]
	default:
		x.Fail(ErrSyntax)
		return
	}
	if !x.authenticate(user, pass) {
		x.Fail(ErrWrongPass)
		return
	}
	x.Authed = true
	x.W.OK()
}

func helloCmd(x *Ctx) {
	ver := int64(0)
	next := 1
	if len(x.Args) >= 2 {
		n, ok := parseInt(x.Args[1])
		if !ok {
			x.W.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if n < 2 || n > 3 {
			x.Fail(ErrNoProto)
			return
		}
		ver = n
		next = 2
	}
	// As Redis 7.0, the options take effect in order: a SETNAME before a
	// failing AUTH or a syntax error has renamed the client.
	for j := next; j < len(x.Args); j++ {
		more := len(x.Args) - 1 - j
		switch {
		case eq(x.Args[j], "auth") && more >= 2:
			if !x.authenticate(x.Args[j+1], x.Args[j+2]) {
				x.Fail(ErrWrongPass)
				return
			}
			x.Authed = true
			j += 2
		case eq(x.Args[j], "setname") && more >= 1:
			if !x.setName(x.Args[j+1]) {
				return
			}
			j++
		default:
			x.W.Error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", cString(x.Args[j])))
			return
		}
	}
	if !x.Authed && x.S.requirePass() != "" {
		x.W.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if ver != 0 {
		x.SetProto(int(ver))
	}
	w := x.W
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(Version)
	w.BulkString("proto")
	w.Int(int64(w.Proto))
	w.BulkString("id")
	w.Int(x.ID)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
}

func resetCmd(x *Ctx) {
	if x.InMulti {
		endMulti(x)
	}
	x.S.watch.unwatchAll(x.Conn)
	// Out of the Pub/Sub context, without a reply per subscription. The
	// messages pushed until then (a PUBLISH that ran as it dropped them
	// included) go before +RESET, in the protocol they were pushed in.
	x.S.pubsub.dropAll(x.Conn)
	x.S.stopMonitor(x.Conn)
	x.SyncPushes()
	x.SetSubscribed(false)
	x.Select(0)
	x.SetProto(2)
	x.Update(func(i *resp.Info) { i.Name = "" })
	x.Authed = x.S.requirePass() == ""
	x.SetReply(resp.ReplyReset)
	x.W.Simple("RESET")
}

// setName validates and sets the client name, writing the error if any.
func (x *Ctx) setName(name []byte) bool {
	for _, c := range name {
		if c < '!' || c > '~' {
			x.Fail(ErrClientName)
			return false
		}
	}
	x.Update(func(i *resp.Info) { i.Name = string(name) })
	return true
}

func clientSetname(x *Ctx) {
	if x.setName(x.Args[2]) {
		x.W.OK()
	}
}

func clientGetname(x *Ctx) {
	if n := x.Info().Name; n != "" {
		x.W.BulkString(n)
		return
	}
	x.W.Null()
}

func clientID(x *Ctx) { x.W.Int(x.ID) }

func clientSetinfo(x *Ctx) {
	val := string(x.Args[3])
	for _, c := range val {
		if c < '!' || c > '~' {
			x.W.Error(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", x.Args[2]))
			return
		}
	}
	switch {
	case eq(x.Args[2], "lib-name"):
		x.Update(func(i *resp.Info) { i.LibName = val })
	case eq(x.Args[2], "lib-ver"):
		x.Update(func(i *resp.Info) { i.LibVer = val })
	default:
		x.W.Error(fmt.Sprintf("ERR Unrecognized option '%s'", cString(x.Args[2])))
		return
	}
	x.W.OK()
}

// clientLine is a connection's line in CLIENT LIST / CLIENT INFO.
func (s *Server) clientLine(c *resp.Conn, now time.Time) string {
	i := c.Info()
	// In Redis's order (P, x, b), N when none: b is a client waiting
	// in a blocking command (ONCE.WAIT, CLAIM … WAIT) or held by CLIENT
	// PAUSE, as Redis 7.0 shows one in BLPOP or held by a pause.
	flags := ""
	if c.Monitoring() {
		flags += "O"
	}
	if c.Subscribed() {
		flags += "P"
	}
	if i.Multi > 0 {
		flags += "x"
	}
	if c.Blocked() {
		flags += "b"
	}
	if flags == "" {
		flags = "N"
	}
	multi := -1
	if i.Multi > 0 {
		multi = i.Multi
	}
	subs := s.pubsub.counts(c)
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		c.ID, c.Addr, c.LocalAddr, i.Name, int(now.Sub(c.Created).Seconds()), int(now.Sub(i.LastActive).Seconds()),
		flags, i.DB, subs[subChannel], subs[subPattern], subs[subShard], multi, i.LastCmd, i.Proto, i.LibName, i.LibVer)
}

// clientType is a client's type, as CLIENT LIST and CLIENT KILL filter
// it: "pubsub" in the Pub/Sub context, else "normal".
func clientType(c *resp.Conn) string {
	if c.Subscribed() {
		return "pubsub"
	}
	return "normal"
}

func clientInfo(x *Ctx) {
	x.W.Verbatim(x.S.clientLine(x.Conn, x.S.cfg.Clock()))
}

func clientList(x *Ctx) {
	var ids map[int64]bool
	typ := "" // no TYPE filter
	rest := x.Args[2:]
	for len(rest) > 0 {
		switch {
		case eq(rest[0], "type") && len(rest) >= 2:
			t := strings.ToLower(string(rest[1]))
			if t != "normal" && t != "master" && t != "replica" && t != "slave" && t != "pubsub" {
				x.W.Error(fmt.Sprintf("ERR Unknown client type '%s'", cString(rest[1])))
				return
			}
			typ = t
			rest = rest[2:]
		case eq(rest[0], "id") && len(rest) >= 2:
			if ids == nil {
				ids = map[int64]bool{}
			}
			for _, a := range rest[1:] {
				n, ok := parseInt(a)
				if !ok || n <= 0 {
					x.W.Error("ERR Invalid client ID")
					return
				}
				ids[n] = true
			}
			rest = nil
		default:
			x.Fail(ErrSyntax)
			return
		}
	}
	var b strings.Builder
	now := x.S.cfg.Clock()
	for _, c := range x.S.clients(x.Conn) {
		if (ids == nil || ids[c.ID]) && (typ == "" || typ == clientType(c)) {
			b.WriteString(x.S.clientLine(c, now))
		}
	}
	x.W.Verbatim(b.String())
}

// clients lists the connections, or just self without a wire server
// (unit tests).
func (s *Server) clients(self *resp.Conn) []*resp.Conn {
	if s.wire == nil {
		return []*resp.Conn{self}
	}
	return s.wire.Clients()
}

func clientKill(x *Ctx) {
	rest := x.Args[2:]
	// Redis's filters: 0 or "" means no filter. The old form, CLIENT KILL
	// addr:port, may kill the caller itself; the new one skips it unless
	// SKIPME no.
	var id int64
	var addr, laddr []byte
	typ := "" // no TYPE filter
	skipme := true
	old := len(rest) == 1
	if old {
		addr, skipme = rest[0], false
	}
	// The pairs are read in order, as Redis does: a bad value before a
	// lone last word is its own error, the lone word a syntax error.
	for i := 0; !old && i < len(rest); i += 2 {
		if i+1 >= len(rest) {
			x.Fail(ErrSyntax)
			return
		}
		v := rest[i+1]
		switch {
		case eq(rest[i], "id"):
			n, ok := parseInt(v)
			if !ok || n <= 0 {
				x.W.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case eq(rest[i], "type"):
			// Every client here is a normal or a Pub/Sub one: no
			// replicas, no master.
			switch {
			case eq(v, "normal"), eq(v, "pubsub"):
				typ = strings.ToLower(string(v))
			case eq(v, "master"), eq(v, "slave"), eq(v, "replica"):
				typ = "master"
			default:
				x.W.Error("ERR Unknown client type '" + cString(v) + "'")
				return
			}
		case eq(rest[i], "addr"):
			addr = v
		case eq(rest[i], "laddr"):
			laddr = v
		case eq(rest[i], "user"):
			// The only user is "default" (ACL names are case-sensitive).
			if string(v) != "default" {
				x.W.Error("ERR No such user '" + cString(v) + "'")
				return
			}
		case eq(rest[i], "skipme"):
			switch {
			case eq(v, "yes"):
				skipme = true
			case eq(v, "no"):
				skipme = false
			default:
				x.Fail(ErrSyntax)
				return
			}
		default:
			x.Fail(ErrSyntax)
			return
		}
	}
	var killed int64
	self := false
	for _, c := range x.S.clients(x.Conn) {
		if (typ != "" && typ != clientType(c)) || (addr != nil && c.Addr != string(addr)) ||
			(laddr != nil && c.LocalAddr != string(laddr)) || (id != 0 && c.ID != id) {
			continue
		}
		if c == x.Conn {
			if skipme {
				continue
			}
			// Closed once the reply is sent, as Redis does.
			self = true
			killed++
			continue
		}
		if x.S.wire != nil && x.S.wire.Kill(c.ID) {
			killed++
		}
	}
	if self {
		x.CloseAfterReply()
	}
	switch {
	case old && killed == 0:
		x.W.Error("ERR No such client")
	case old:
		x.W.OK()
	default:
		x.W.Int(killed)
	}
}

func clientOnOff(x *Ctx) {
	if !eq(x.Args[2], "on") && !eq(x.Args[2], "off") {
		x.Fail(ErrSyntax)
		return
	}
	x.W.OK()
}

// clientReply is CLIENT REPLY: resp drops the replies (reply.go).
func clientReply(x *Ctx) {
	switch {
	case eq(x.Args[2], "on"):
		x.SetReply(resp.ReplyOn)
		x.W.OK()
	case eq(x.Args[2], "off"):
		x.SetReply(resp.ReplyOff)
	case eq(x.Args[2], "skip"):
		x.SetReply(resp.ReplySkip)
	default:
		x.Fail(ErrSyntax)
	}
}

// clientHelpCommand is CLIENT HELP's entry: Redis 7.0 does not flag it
// noscript, as it does the other CLIENT subcommands.
func clientHelpCommand(c *Command) *Command {
	c.Flags &^= NoScript
	return c
}

func clientHelp(x *Ctx) {
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GETNAME", "    Return the name of the current connection.",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
		"    * USER <username>", "      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
		"LIST [TYPE NORMAL] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"UNPAUSE", "    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
		"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
		"SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
		"HELP", "    Prints this help.",
	}
	if hidden := x.S.helpHidden; len(hidden) > 0 {
		// An entry is its line and the indented lines under it.
		kept, skip := lines[:1:1], false
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, " ") {
				name, _, _ := strings.Cut(l, " ")
				skip = hidden[strings.ToLower(name)]
			}
			if !skip {
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// subcommandSyntax answers a subcommand given too many arguments for its
// form, as Redis's addReplySubcommandSyntaxError words it.
func subcommandSyntax(x *Ctx) {
	x.W.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(x.Args[1]), 128) +
		"'. Try " + strings.ToUpper(string(x.Args[0])) + " HELP.")
}

// itoa is strconv.FormatInt for INFO lines.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
