package resp

// CLIENT REPLY ON|OFF|SKIP, as Redis 7.0 does it: OFF drops the replies of
// every command from itself on, until CLIENT REPLY ON (whose +OK is sent);
// SKIP drops its own reply and the next command's (nothing, while OFF).
// The server drops a command's reply when it has run (Server.call), and a
// blocked command's when it finishes (runBlocked), from where the reply
// started: a handler that writes a reply later, in its place among the
// replies of the pipeline (the proxy), asks Silent whether to write it at
// all, and calls KeepReplies after writing the replies of earlier
// commands while a later one runs.

// ReplyMode is an argument of CLIENT REPLY, or ReplyReset.
type ReplyMode uint8

// The modes of CLIENT REPLY, and RESET's.
const (
	ReplyOn ReplyMode = iota
	ReplyOff
	ReplySkip
	// ReplyReset is what RESET does: OFF and a SKIP for the next command
	// end, but a SKIP before RESET still drops RESET's own reply, as in
	// Redis 7.0 (its RESET clears CLIENT_REPLY_OFF and _SKIP_NEXT, not
	// CLIENT_REPLY_SKIP).
	ReplyReset
)

// SetReply is CLIENT REPLY mode (or RESET), run by the current command.
func (c *Conn) SetReply(mode ReplyMode) {
	switch mode {
	case ReplyOn:
		c.replyOff, c.skipNext, c.skipping = false, false, false
	case ReplyOff:
		c.replyOff = true
	case ReplySkip:
		if !c.replyOff {
			c.skipNext = true
		}
	case ReplyReset:
		c.replyOff, c.skipNext = false, false
	}
}

// Silent reports whether the reply of the current command is dropped.
func (c *Conn) Silent() bool { return c.replyOff || c.skipping }

// WritePush writes a push of the current command to W (a Pub/Sub
// confirmation, or a message it publishes to itself). Unlike its reply, a
// push is sent even while CLIENT REPLY OFF or SKIP drops the reply, as
// Redis 7.0 sends them (CLIENT_PUSHING): what the command wrote before it
// is dropped now, as endReply would drop it, and the push is kept.
func (c *Conn) WritePush(fn func(w *Writer)) {
	silent := c.Silent()
	if silent && c.replyMark <= c.W.Len() {
		c.W.Truncate(c.replyMark)
	}
	fn(c.W)
	if silent {
		c.replyMark = c.W.Len()
	}
}

// KeepReplies marks what W holds now as replies of earlier commands, which
// dropping the current command's reply must keep.
func (c *Conn) KeepReplies() { c.replyMark = c.W.Len() }

// beginReply starts a command whose reply starts at mark in W.
func (c *Conn) beginReply(mark int) {
	c.skipping, c.skipThis = c.skipThis, false
	c.replyMark = mark
}

// endReply drops the reply of a command that ran silent and turns a SKIP
// into the next command's.
func (c *Conn) endReply() {
	silent := c.Silent()
	if silent && c.replyMark <= c.W.Len() {
		c.W.Truncate(c.replyMark)
	}
	c.blockSilent = silent && c.block != nil
	c.skipping = false
	if c.skipNext {
		c.skipThis, c.skipNext = true, false
	}
}
