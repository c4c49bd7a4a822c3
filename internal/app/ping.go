package app

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/oncekv/oncekv/internal/config"
)

// Ping is `oncekv ping [--host H] [--port N] [--password P] [--timeout D]`:
// it sends PING (after AUTH when a password is given) to a server and
// returns nil when the answer is +PONG. It is the container health check,
// for images that have no redis-cli. The port and password default to
// ONCEKV_PORT and ONCEKV_REQUIREPASS in environ (os.Environ's form), so
// that a container configured by environment needs no flags. It writes
// "PONG" to stdout on success; usage errors go to stderr.
func Ping(args, environ []string, stdout, stderr io.Writer) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	port := 6379
	if v := env[config.EnvName("port")]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("ping: %s=%q is not a port number", config.EnvName("port"), v)
		}
		port = n
	}
	fs := flag.NewFlagSet("oncekv ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "the server's address")
	fs.IntVar(&port, "port", port, "the server's port (default: $"+config.EnvName("port")+" or 6379)")
	password := fs.String("password", env[config.EnvName("requirepass")], "AUTH with this password first (default: $"+config.EnvName("requirepass")+")")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer, in all")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: oncekv ping [--host H] [--port N] [--password P] [--timeout D]\nexits 0 when the server answers PING with PONG")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("ping: unexpected argument %q", fs.Arg(0))
	}
	addr := net.JoinHostPort(*host, strconv.Itoa(port))
	if err := ping(addr, *password, *timeout); err != nil {
		return fmt.Errorf("ping %s: %w", addr, err)
	}
	fmt.Fprintln(stdout, "PONG")
	return nil
}

func ping(addr, password string, timeout time.Duration) error {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	// One line is all a +simple or -error reply has; bound what is read.
	rd := bufio.NewReader(io.LimitReader(nc, 64<<10))
	call := func(args ...string) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(nc, b.String()); err != nil {
			return "", err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", errors.New("the server closed the connection without answering")
			}
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	if password != "" {
		reply, err := call("AUTH", password)
		if err != nil {
			return err
		}
		if reply != "+OK" {
			return fmt.Errorf("AUTH answered %q", reply)
		}
	}
	reply, err := call("PING")
	if err != nil {
		return err
	}
	switch {
	case reply == "+PONG":
		return nil
	case strings.HasPrefix(reply, "-NOAUTH"):
		return fmt.Errorf("the server needs a password: pass --password or set %s (it answered %q)", config.EnvName("requirepass"), reply)
	}
	return fmt.Errorf("PING answered %q, not +PONG", reply)
}
