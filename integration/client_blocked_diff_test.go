package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// clientFields splits a CLIENT LIST line into its field names, in order,
// and their values.
func clientFields(line string) (names []string, vals map[string]string) {
	vals = map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		names = append(names, k)
		vals[k] = v
	}
	return names, vals
}

// awaitBlocked waits until INFO clients shows n blocked clients.
func awaitBlocked(t *testing.T, c *RawConn, n int) {
	t.Helper()
	want := fmt.Sprint(n)
	waitFor(t, 5*time.Second, 5*time.Millisecond, "blocked_clients = "+want, func() (bool, string) {
		got := infoField(rawFrame(t, c, "INFO", "clients").Str, "blocked_clients")
		return got == want, "blocked_clients = " + got
	})
}

// TestDiffClientListBlocked: a blocked client's CLIENT LIST line, against
// a real redis-server 7.0's: flags=b for a client blocked in a blocking
// command (BLPOP on both; ONCE.WAIT and ONCE.CLAIM … WAIT here) or held
// by CLIENT PAUSE, flags=N again once it is answered;
// the fields Redis 7.0 has come in its order, and those whose values do
// not depend on the process (name, flags, db, sub, psub, ssub, multi,
// events, user, redir, resp) are equal, cmd too where both ran the same
// command.
func TestDiffClientListBlocked(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	comparable := []string{"name", "flags", "db", "sub", "psub", "ssub", "multi", "events", "user", "redir", "resp"}
	type sideArgs struct{ redis, other []string }
	cases := []struct {
		name  string
		proto int
		// setup runs on the control connection before the client blocks.
		setup sideArgs
		block sideArgs
		pause bool // the client is held by CLIENT PAUSE WRITE
		// end runs on the control connection and answers the client.
		end       sideArgs
		sameCmd   bool
		wantOther string // the blocked client's cmd on oncekv
	}{
		{name: "blocking command", proto: 2,
			block:   sideArgs{[]string{"BLPOP", "l", "0"}, []string{"BLPOP", "l", "0"}},
			end:     sideArgs{[]string{"RPUSH", "l", "x"}, []string{"RPUSH", "l", "x"}},
			sameCmd: true, wantOther: "blpop"},
		{name: "ONCE.WAIT", proto: 2,
			setup:     sideArgs{nil, []string{"ONCE.CLAIM", "k", "LEASE", "60000"}},
			block:     sideArgs{[]string{"BLPOP", "l", "0"}, []string{"ONCE.WAIT", "k"}},
			end:       sideArgs{[]string{"RPUSH", "l", "x"}, []string{"DEL", "k"}},
			wantOther: "once.wait"},
		{name: "blocking command, RESP3", proto: 3,
			setup:     sideArgs{nil, []string{"ONCE.CLAIM", "k", "LEASE", "60000"}},
			block:     sideArgs{[]string{"BLPOP", "l", "0"}, []string{"ONCE.CLAIM", "k", "WAIT", "0"}},
			end:       sideArgs{[]string{"RPUSH", "l", "x"}, []string{"DEL", "k"}},
			wantOther: "once.claim"},
		{name: "held by CLIENT PAUSE WRITE", proto: 2,
			block: sideArgs{[]string{"SET", "k", "v"}, []string{"SET", "k", "v"}},
			pause: true, end: sideArgs{[]string{"CLIENT", "UNPAUSE"}, []string{"CLIENT", "UNPAUSE"}},
			sameCmd: true, wantOther: "set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := map[string][2]string{} // "blocked", "after" -> redis, other
			for i, addr := range []string{p.Redis, p.Other} {
				pick := func(a sideArgs) []string {
					if i == 0 || p.O == nil { // both sides are redis-servers
						return a.redis
					}
					return a.other
				}
				ctl := DialRaw(t, addr)
				rawFrame(t, ctl, "FLUSHALL")
				if a := pick(tc.setup); a != nil {
					rawFrame(t, ctl, a...)
				}
				c := DialRaw(t, addr)
				if tc.proto == 3 {
					rawFrame(t, c, "HELLO", "3")
				}
				id := clientID(t, c)
				if tc.pause {
					rawFrame(t, ctl, "CLIENT", "PAUSE", "100000", "WRITE")
				}
				c.Send(EncodeCommand(pick(tc.block)...))
				awaitBlocked(t, ctl, 1)
				blocked := clientLine(t, ctl, id)
				rawFrame(t, ctl, pick(tc.end)...)
				c.ReadFrame()
				awaitBlocked(t, ctl, 0)
				after := clientLine(t, ctl, id)
				for what, l := range map[string]string{"blocked": blocked, "after": after} {
					v := lines[what]
					v[i] = l
					lines[what] = v
				}
				c.Close()
				ctl.Close()
			}
			for _, what := range []string{"blocked", "after"} {
				rl, ol := lines[what][0], lines[what][1]
				rn, rv := clientFields(rl)
				on, ov := clientFields(ol)
				if len(on) < len(rn) || !slices.Equal(on[:len(rn)], rn) {
					t.Errorf("%s: fields %q, want redis's %q first\nredis:  %s\n%s: %s", what, on, rn, rl, p.OtherName, ol)
				}
				for _, f := range comparable {
					if rv[f] != ov[f] {
						t.Errorf("%s: %s=%q, redis has %q\nredis:  %s\n%s: %s", what, f, ov[f], rv[f], rl, p.OtherName, ol)
					}
				}
				if what == "blocked" {
					if rv["flags"] != "b" {
						t.Errorf("redis: blocked client's flags=%q, want b: %s", rv["flags"], rl)
					}
					want := tc.wantOther
					if p.O == nil || tc.sameCmd {
						want = rv["cmd"]
					}
					if ov["cmd"] != want {
						t.Errorf("blocked: cmd=%q, want %q\n%s: %s", ov["cmd"], want, p.OtherName, ol)
					}
				}
			}
		})
	}
}
