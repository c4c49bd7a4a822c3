package commands

import (
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// argsFor builds a command line that passes c's arity check: its name
// (container and subcommand for a subcommand) and filler arguments.
func argsFor(c *Command) [][]byte {
	var args [][]byte
	for _, part := range strings.Split(c.Name, "|") {
		args = append(args, []byte(part))
	}
	n := c.Arity
	if n < 0 {
		n = -n
	}
	for len(args) < n {
		args = append(args, []byte("x"))
	}
	return args
}

// serveOnce runs args on a fresh unauthenticated connection and returns
// the reply.
func serveOnce(s *Server, authed bool, args ...[]byte) string {
	c := &resp.Conn{W: resp.NewWriter(2), Authed: authed}
	s.Serve(c, args)
	s.BeforeReply(c)
	return string(c.W.Bytes())
}

// Before AUTH, every command but AUTH, HELLO, QUIT and RESET (Redis 7.0's
// no_auth commands) answers NOAUTH, whatever its arguments; the whole
// table is checked, subcommands included, so that a command added later
// cannot slip through.
func TestEveryCommandNeedsAuth(t *testing.T) {
	s := New(Config{RequirePass: "s3cret"}, cmdTestStore{})
	s.EnableOnce(nil) // the ONCE commands too; they never run here
	const noauth = "-NOAUTH Authentication required.\r\n"
	allowed := map[string]bool{}
	checked := 0
	for _, c := range s.table.sorted() {
		cmds := []*Command{c}
		if len(c.Subcommands) > 0 {
			cmds = c.Subcommands // the container alone fails its arity check first, as in Redis
		}
		for _, cmd := range cmds {
			args := argsFor(cmd)
			got := serveOnce(s, false, args...)
			checked++
			if cmd.Flags&NoAuth != 0 {
				allowed[cmd.Name] = true
				if got == noauth {
					t.Errorf("%s (no_auth) answered NOAUTH", cmd.Name)
				}
				continue
			}
			want := noauth
			if cmd.Name == "exec" {
				want = "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n"
			}
			if got != want {
				t.Errorf("%q before AUTH answered %q, want %q", args, got, want)
			}
		}
	}
	want := map[string]bool{"auth": true, "hello": true, "quit": true, "reset": true}
	if len(allowed) != len(want) {
		t.Errorf("commands allowed before AUTH: %v, want %v", allowed, want)
	}
	for name := range want {
		if !allowed[name] {
			t.Errorf("%s is not allowed before AUTH", name)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d commands checked", checked)
	}
	// A container with a bad subcommand or arity errs before NOAUTH, as
	// in Redis, and tells nothing but the command table.
	if got := serveOnce(s, false, []byte("GET")); !strings.HasPrefix(got, "-ERR wrong number of arguments") {
		t.Errorf("GET without a key before AUTH: %q", got)
	}
}

func TestPasswordComparison(t *testing.T) {
	const pass = "s3cret\x00with-a-NUL"
	s := New(Config{RequirePass: pass}, cmdTestStore{})
	const ok, wrong = "+OK\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	for _, p := range []string{pass, strings.ToUpper(pass)[:0] + pass} {
		if got := serveOnce(s, false, []byte("AUTH"), []byte(p)); got != ok {
			t.Errorf("AUTH %q: %q", p, got)
		}
		if got := serveOnce(s, false, []byte("AUTH"), []byte("default"), []byte(p)); got != ok {
			t.Errorf("AUTH default %q: %q", p, got)
		}
	}
	for _, p := range []string{"", "s", "s3cret", pass[:len(pass)-1], pass + "x", pass + "\x00", "S3CRET\x00with-a-NUL",
		"x" + pass[1:], strings.Repeat(pass, 100), strings.Repeat("x", 4096)} {
		if got := serveOnce(s, false, []byte("AUTH"), []byte(p)); got != wrong {
			t.Errorf("AUTH %q: %q", p, got)
		}
		if s.checkPassword([]byte(p)) {
			t.Errorf("checkPassword(%q) accepted", p)
		}
	}
	if got := serveOnce(s, false, []byte("AUTH"), []byte("alice"), []byte(pass)); got != wrong {
		t.Errorf("AUTH alice <right password>: %q", got)
	}
	if got := serveOnce(s, false, []byte("HELLO"), []byte("3"), []byte("AUTH"), []byte("default"), []byte(pass)); !strings.HasPrefix(got, "%7\r\n") {
		t.Errorf("HELLO 3 AUTH default <password>: %.40q", got)
	}
	if got := serveOnce(s, false, []byte("HELLO"), []byte("3"), []byte("AUTH"), []byte("default"), []byte("nope")); got != wrong {
		t.Errorf("HELLO 3 AUTH default nope: %q", got)
	}
	// Without a password, AUTH <pass> is an error and AUTH default <any>
	// succeeds, as in Redis.
	open := New(Config{}, cmdTestStore{})
	if got := serveOnce(open, true, []byte("AUTH"), []byte("x")); !strings.HasPrefix(got, "-ERR AUTH <password> called without any password configured") {
		t.Errorf("AUTH x without a password: %q", got)
	}
}
