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

// ReplyMode is an argument of CLIENT REPLY.
type ReplyMode uint8

// The modes of CLIENT REPLY.
const (
	ReplyOn ReplyMode = iota
	ReplyOff
	ReplySkip
)

// SetReply is CLIENT REPLY mode, run by the current command.
func (c *Conn) SetReply(mode ReplyMode) {
	switch mode {
	case ReplyOn:
		c.replyOff, c.skipNext, c.silent = false, false, false
	case ReplyOff:
		c.replyOff, c.silent = true, true
	case ReplySkip:
		if !c.replyOff {
			c.skipNext, c.silent = true, true
		}
	}
}

// Silent reports whether the reply of the current command is dropped.
func (c *Conn) Silent() bool { return c.silent }

// KeepReplies marks what W holds now as replies of earlier commands, which
// dropping the current command's reply must keep.
func (c *Conn) KeepReplies() { c.replyMark = c.W.Len() }

// beginReply starts a command whose reply starts at mark in W.
func (c *Conn) beginReply(mark int) {
	c.silent = c.replyOff || c.skipThis
	c.skipThis = false
	c.replyMark = mark
}

// endReply drops the reply of a command that ran silent and turns a SKIP
// into the next command's.
func (c *Conn) endReply() {
	if c.silent && c.replyMark <= c.W.Len() {
		c.W.Truncate(c.replyMark)
	}
	c.blockSilent = c.silent && c.block != nil
	c.silent = false
	if c.skipNext {
		c.skipThis, c.skipNext = true, false
	}
}
