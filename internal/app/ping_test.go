package app

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func portOf(t *testing.T, a *App) string {
	t.Helper()
	return strconv.Itoa(a.Addr().(*net.TCPAddr).Port)
}

// `oncekv ping` exits 0 (returns nil) on +PONG only.
func TestPing(t *testing.T) {
	open := startRT(t, nil)
	locked := startRT(t, nil, "--requirepass", "s3cret")
	closed := func() string { // a port nobody listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		err  string // "" : success
	}{
		{name: "no password", args: []string{"--port", portOf(t, open)}},
		{name: "password flag", args: []string{"--port", portOf(t, locked), "--password", "s3cret"}},
		{name: "environment", env: []string{"ONCEKV_PORT=" + portOf(t, locked), "ONCEKV_REQUIREPASS=s3cret"}},
		{name: "flag over environment", args: []string{"--port", portOf(t, open), "--password", ""},
			env: []string{"ONCEKV_PORT=" + closed, "ONCEKV_REQUIREPASS=wrong"}},
		{name: "needs a password", args: []string{"--port", portOf(t, locked)}, err: "the server needs a password: pass --password or set ONCEKV_REQUIREPASS"},
		{name: "wrong password", args: []string{"--port", portOf(t, locked), "--password", "nope"}, err: `AUTH answered "-WRONGPASS`},
		{name: "nobody there", args: []string{"--port", closed, "--timeout", "1s"}, err: "connection refused"},
		{name: "bad environment", env: []string{"ONCEKV_PORT=x"}, err: `ONCEKV_PORT="x" is not a port number`},
		{name: "stray argument", args: []string{"--port", portOf(t, open), "extra"}, err: `unexpected argument "extra"`},
		{name: "bad flag", args: []string{"--nope"}, err: "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := Ping(tc.args, tc.env, &out, &errOut)
			if tc.err == "" {
				if err != nil || out.String() != "PONG\n" {
					t.Fatalf("err %v, stdout %q", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.err)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q on failure", out.String())
			}
		})
	}
}

// A server that answers something else than +PONG (still loading, say),
// or nothing at all, fails the check within the timeout.
func TestPingOtherReplies(t *testing.T) {
	for _, tc := range []struct {
		reply string
		err   string
	}{
		{"-LOADING Redis is loading the dataset in memory\r\n", `PING answered "-LOADING`},
		{"", "i/o timeout"},
		{"close", "closed the connection without answering"},
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			buf := make([]byte, 64)
			_, _ = nc.Read(buf)
			switch tc.reply {
			case "close":
				return
			case "":
				_, _ = io.Copy(io.Discard, nc) // silent until the client gives up
			default:
				_, _ = nc.Write([]byte(tc.reply))
			}
		}()
		start := time.Now()
		err = Ping([]string{"--port", strconv.Itoa(l.Addr().(*net.TCPAddr).Port), "--timeout", "500ms"}, nil, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("reply %q: err = %v, want %q", tc.reply, err, tc.err)
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("reply %q: took %v with --timeout 500ms", tc.reply, d)
		}
		l.Close()
	}
}
