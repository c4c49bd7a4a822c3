package config

import (
	"strconv"
	"strings"
	"time"
)

// BufferLimit is client-output-buffer-limit for one class of clients:
// a client whose pending output reaches Hard bytes, or stays over Soft
// bytes for longer than SoftSeconds, is closed. Zero is no limit.
type BufferLimit struct {
	Hard, Soft  int64
	SoftSeconds int64
}

// SoftFor is SoftSeconds as a duration.
func (l BufferLimit) SoftFor() time.Duration { return time.Duration(l.SoftSeconds) * time.Second }

// The classes of client-output-buffer-limit, in Redis's order (its
// CLIENT_TYPE_NORMAL, _SLAVE, _PUBSUB). Pubsub is enforced here, and
// normal for monitors only (with a default bound when it sets none, see
// resp.MonitorLimit): there are no replicas, and other normal clients are
// held back by their own socket (resp's flushAt) instead.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubsub
	nclasses
)

// classNames are the classes as CONFIG GET names them; CONFIG REWRITE
// writes "replica" for "slave", as Redis 7.0 does.
var classNames = [nclasses]string{"normal", "slave", "pubsub"}

// defaultBufferLimits are Redis's.
var defaultBufferLimits = [nclasses]BufferLimit{
	{},
	{Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
	{Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
}

// setBufferLimits applies "class hard soft seconds" groups, all or none,
// checked as Redis 7.0 checks them; the error is Redis's text.
func (c *Config) setBufferLimits(words []string) string {
	if len(words)%4 != 0 {
		return "Wrong number of arguments in buffer limit configuration."
	}
	next := c.ClientOutputBufferLimit
	for i := 0; i < len(words); i += 4 {
		class := -1
		switch strings.ToLower(words[i]) {
		case "normal":
			class = ClassNormal
		case "slave", "replica":
			class = ClassReplica
		case "pubsub":
			class = ClassPubsub
		}
		if class < 0 {
			return "Invalid client class specified in buffer limit configuration."
		}
		var n [3]int64
		for j := range n {
			v, why := redisMemory(words[i+1+j], 0)
			if why != "" {
				return "Error in hard, soft or soft_seconds setting in buffer limit configuration."
			}
			n[j] = v
		}
		next[class] = BufferLimit{Hard: n[0], Soft: n[1], SoftSeconds: n[2]}
	}
	c.ClientOutputBufferLimit = next
	return ""
}

// bufferLimitsValue is CONFIG GET's value: every class, in bytes.
func (c Config) bufferLimitsValue() string {
	var b strings.Builder
	for i, l := range c.ClientOutputBufferLimit {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(classNames[i] + " " + strconv.FormatInt(l.Hard, 10) + " " +
			strconv.FormatInt(l.Soft, 10) + " " + strconv.FormatInt(l.SoftSeconds, 10))
	}
	return b.String()
}

// bufferLimitsLines are CONFIG REWRITE's lines, one per class as Redis
// writes them, and whether each differs from the default.
func (c Config) bufferLimitsLines() (vals []string, force []bool) {
	for i, l := range c.ClientOutputBufferLimit {
		name := classNames[i]
		if i == ClassReplica {
			name = "replica"
		}
		vals = append(vals, name+" "+FormatMemory(l.Hard)+" "+FormatMemory(l.Soft)+" "+strconv.FormatInt(l.SoftSeconds, 10))
		force = append(force, l != defaultBufferLimits[i])
	}
	return vals, force
}
