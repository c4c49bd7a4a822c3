package commands

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/resp"
)

// FuzzServe runs random command lines (commands separated by '\n',
// arguments by ' ') on one connection of a server over a real store with
// the ONCE engine, and checks that no command panics (a recovered panic
// is logged: that fails too), that every command answers exactly one
// well-formed RESP frame, and that a RESP2 connection gets only RESP2
// types.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"SET k v\nGET k\nAPPEND k vv\nSTRLEN k\nGETRANGE k 0 -1",
		"INCR c\nINCRBY c 9223372036854775807\nDECRBY c -9223372036854775808\nINCRBYFLOAT c 1e308",
		"MULTI\nSET a 1\nINCR a\nGET a\nEXEC\nDISCARD",
		"WATCH a\nMULTI\nSET a 2\nEXEC\nUNWATCH",
		"ONCE.CLAIM job LEASE 100\nONCE.COMPLETE job 1 answer KEEP 1000\nONCE.CLAIM job\nONCE.STATUS job",
		"ONCE.CLAIM j WAIT 0 FINGERPRINT a\nONCE.WAIT j TIMEOUT 1\nONCE.ABORT j 1 failed\nONCE.EXTEND j 1 LEASE 5",
		"SET k v EX 100 NX GET\nEXPIRE k 0 NX\nTTL k\nPTTL k\nPERSIST k\nGETEX k PXAT 1\nSET k v KEEPTTL XX",
		"SCAN 0 MATCH * COUNT 10 TYPE string\nKEYS *\nDBSIZE\nSELECT 3\nFLUSHDB\nRANDOMKEY",
		"HELLO 3\nONCE.STATUS job\nCLIENT INFO\nCOMMAND INFO get once.claim\nCONFIG GET *",
		"CLIENT LIST\nCLIENT SETNAME x\nCLIENT KILL ID 1\nINFO all\nCOMMAND DOCS get\nCOMMAND GETKEYS SET k v",
		"MSET a 1 b 2\nMGET a b c\nSETRANGE a 1048575 x\nSETRANGE a 9223372036854775807 x\nLCS a b",
		"RESET\nQUIT\nPING x\nECHO y\nTIME\nTYPE a\nRENAME a b\nCOPY b c DB 2 REPLACE",
		"SET a 1\nSWAPDB 0 1\nMOVE a 0\nOBJECT ENCODING a\nDUMP a\nRESTORE r 0 x REPLACE ABSTTL\nOBJECT REFCOUNT a",
		"SADD s 1 2 a\nSMEMBERS s\nSPOP s 2\nSRANDMEMBER s -3\nSMOVE s t a\nSINTERCARD 2 s t LIMIT 1\nSSCAN s 0 COUNT 1",
		"HELLO 3\nSADD s 1\nSUNIONSTORE d s t\nSDIFF d s\nSINTER s d\nOBJECT ENCODING d\nDUMP d\nSET t x\nSADD t 1",
		"ZADD z 1 a 2 b NX CH\nZINCRBY z 0.1 a\nZRANGE z 0 -1 WITHSCORES\nZRANGE z (1 +inf BYSCORE REV LIMIT 0 1\nZPOPMIN z 5",
		"ZADD z 0 a 0 b\nZRANGEBYLEX z [a (c\nZRANDMEMBER z -9223372036854775807\nZUNIONSTORE d 2 z z WEIGHTS 1 2\nZSCAN z 0",
		"HELLO 3\nZADD z inf a\nZMPOP 1 z MAX COUNT 9\nZINTERCARD 1 z LIMIT 0\nZRANDMEMBER z 3 WITHSCORES\nZMSCORE z a",
		"HELLO 3\nSUBSCRIBE c\nPUBLISH c m\nPSUBSCRIBE *\nPUBSUB NUMSUB c\nSSUBSCRIBE s\nSPUBLISH s m\nUNSUBSCRIBE\nRESET",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	// go test -fuzz discards its workers' stderr, so a worker that dies
	// (a panic outside a command, a fatal error) is reported as "fuzzing
	// process hung or terminated unexpectedly: exit status 2" and nothing
	// more. With ONCEKV_FUZZ_CRASH set to a path, each worker writes what
	// it dies of to that path with its process ID appended.
	if p := os.Getenv("ONCEKV_FUZZ_CRASH"); p != "" {
		out, err := os.OpenFile(fmt.Sprintf("%s.%d", p, os.Getpid()), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			f.Fatal(err)
		}
		if err := debug.SetCrashOutput(out, debug.CrashOptions{}); err != nil {
			f.Fatal(err)
		}
		out.Close() // SetCrashOutput keeps its own descriptor
	}
	core, logs := observer.New(zap.WarnLevel)
	log := zap.New(core)
	st := openTestStore(f)
	eng := once.New(st, once.Config{DefaultLease: time.Second, Logger: log})
	if err := eng.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(eng.Close)
	srv := New(Config{
		ProtoMaxBulkLen: 1 << 20, // SETRANGE and APPEND build at most 1 MB here
		Logger:          log,
		Directives:      func() map[string]string { return map[string]string{"databases": "16", "maxclients": "10000"} },
		Persistence:     func() map[string]string { return map[string]string{} },
		ExpiredKeys:     func() int64 { return 0 },
		Shutdown:        func() {},
	}, st)
	srv.EnableOnce(eng)
	srv.Attach(resp.NewServer(resp.Config{}, srv)) // never started: CLIENT KILL finds no one

	// The store is shared by every input a worker runs, so that inputs
	// meet each other's keys and claims. Left to grow, it made KEYS and
	// FLUSHDB cost the whole of it: after about 200,000 inputs one such
	// input ran past the 10 s go test -fuzz allows an input ("fuzzing
	// process hung or terminated unexpectedly", the worker's "deadlocked!"
	// panic). Flushed every fuzzFlushEvery inputs, the store stays around
	// the size where those commands take a fifth of a second.
	inputs := 0
	f.Fuzz(func(t *testing.T, data []byte, resp3 bool) {
		if inputs++; inputs%fuzzFlushEvery == 0 {
			flushAll(t, srv)
		}
		proto := 2
		if resp3 {
			proto = 3
		}
		c := &resp.Conn{W: resp.NewWriter(proto), Authed: true}
		defer srv.Disconnected(c)
		lines := bytes.Split(data, []byte("\n"))
		if len(lines) > 32 {
			lines = lines[:32]
		}
		for _, line := range lines {
			var args [][]byte
			for _, a := range bytes.Split(line, []byte(" ")) {
				if len(a) > 0 {
					args = append(args, a)
				}
			}
			if len(args) == 0 {
				continue
			}
			srv.Serve(c, args)
			srv.BeforeReply(c) // as the wire does before it sends or blocks
			if fn := c.TakeBlock(); fn != nil {
				// Let a blocked command finish on its own for a moment,
				// then leave: it must return at once, answering nothing.
				left := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					fn(left)
				}()
				select {
				case <-done:
				case <-time.After(5 * time.Millisecond):
					close(left)
					<-done
					if c.W.Len() == 0 {
						continue
					}
				}
			}
			out := c.W.Bytes()
			// One reply, after any pushes (RESP3: a message the client
			// published to itself goes first); the subscription commands
			// answer one frame per channel, as in Redis.
			frames, replies := 0, 0
			for rest := out; len(rest) > 0; frames++ {
				n, err := frameLen(rest, c.W.Proto == 2)
				if err != nil {
					t.Fatalf("%q answered %.300q: %v", args, out, err)
				}
				if rest[0] != '>' {
					replies++
				}
				rest = rest[n:]
			}
			if frames == 0 {
				t.Fatalf("%q answered nothing", args)
			}
			if replies > 1 && !subscription(args[0]) {
				t.Fatalf("%q answered more than one frame: %.300q", args, out)
			}
			c.W.Reset()
			for _, e := range logs.TakeAll() {
				if strings.Contains(e.Message, "panic") {
					t.Fatalf("%q: %s: %v\n%s", args, e.Message, e.ContextMap()["panic"], e.ContextMap()["stack"])
				}
			}
		}
	})
}

// fuzzFlushEvery is how many inputs FuzzServe runs on its store between
// two FLUSHALLs.
const fuzzFlushEvery = 5000

// flushAll empties every database of srv's store with FLUSHALL.
func flushAll(t *testing.T, srv *Server) {
	t.Helper()
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	defer srv.Disconnected(c)
	srv.Serve(c, [][]byte{[]byte("FLUSHALL")})
	srv.BeforeReply(c)
	if got := string(c.W.Bytes()); got != "+OK\r\n" {
		t.Fatalf("FLUSHALL between inputs answered %q", got)
	}
}

// frameLen returns the length of the one RESP frame at the start of b. With
// resp2, only RESP2 types are allowed.
func frameLen(b []byte, resp2 bool) (int, error) {
	line := func() (string, int, error) {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 1 {
			return "", 0, fmt.Errorf("no line end")
		}
		s := string(b[1:i])
		if strings.ContainsAny(s, "\r\n") {
			return "", 0, fmt.Errorf("a line break inside a line")
		}
		return s, i + 2, nil
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("no reply")
	}
	t := b[0]
	if resp2 && !strings.ContainsRune("+-:$*", rune(t)) {
		return 0, fmt.Errorf("RESP3 type %q on a RESP2 connection", t)
	}
	s, n, err := line()
	if err != nil {
		return 0, err
	}
	switch t {
	case '+', '-':
		if t == '-' && s == "" {
			return 0, fmt.Errorf("an empty error")
		}
		return n, nil
	case ':', '(':
		if _, err := strconv.ParseInt(s, 10, 64); err != nil && t == ':' {
			return 0, fmt.Errorf("integer %q", s)
		}
		return n, nil
	case ',':
		return n, nil
	case '#':
		if s != "t" && s != "f" {
			return 0, fmt.Errorf("boolean %q", s)
		}
		return n, nil
	case '_':
		if s != "" {
			return 0, fmt.Errorf("null %q", s)
		}
		return n, nil
	case '$', '=', '!':
		size, err := strconv.Atoi(s)
		if err != nil || size < -1 || (size == -1 && t != '$') {
			return 0, fmt.Errorf("bulk length %q", s)
		}
		if size == -1 {
			return n, nil
		}
		if len(b) < n+size+2 || string(b[n+size:n+size+2]) != "\r\n" {
			return 0, fmt.Errorf("bulk of %d not followed by CRLF", size)
		}
		if t == '=' && (size < 4 || b[n+3] != ':') {
			return 0, fmt.Errorf("verbatim string without its format")
		}
		return n + size + 2, nil
	case '*', '%', '~', '>', '|':
		count, err := strconv.Atoi(s)
		if err != nil || count < -1 || (count == -1 && t != '*') {
			return 0, fmt.Errorf("aggregate length %q", s)
		}
		if t == '%' || t == '|' {
			count *= 2
		}
		for range max(count, 0) {
			m, err := frameLen(b[n:], resp2)
			if err != nil {
				return 0, err
			}
			n += m
		}
		if t == '|' { // an attribute precedes the frame it describes
			m, err := frameLen(b[n:], resp2)
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
	return 0, fmt.Errorf("unknown type %q", t)
}

// subscription reports whether name is one of the Pub/Sub commands that
// answer a frame for each channel they name (or held).
func subscription(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
		return true
	}
	return false
}
