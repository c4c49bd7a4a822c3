package integration

import (
	"github.com/oncekv/oncekv/internal/testredis"

	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandInfo is what COMMAND tells about one command.
type commandInfo struct {
	name   string
	arity  int
	noAuth bool
}

// commandTable reads COMMAND from an authenticated connection: every
// command and subcommand with its arity and whether it is no_auth.
func commandTable(t *testing.T, c *RawConn) map[string]commandInfo {
	t.Helper()
	_ = c.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.TrySend(EncodeCommand("COMMAND")); err != nil {
		t.Fatal(err)
	}
	f := c.ReadFrame()
	out := map[string]commandInfo{}
	var add func(e *Frame)
	add = func(e *Frame) {
		if len(e.Elems) < 3 {
			t.Fatalf("COMMAND entry %q", e.Raw)
		}
		arity, _ := e.Elems[1].Int()
		info := commandInfo{name: e.Elems[0].Str, arity: int(arity)}
		for _, fl := range e.Elems[2].Elems {
			if fl.Str == "no_auth" {
				info.noAuth = true
			}
		}
		out[info.name] = info
		if len(e.Elems) >= 10 {
			for _, sub := range e.Elems[9].Elems {
				add(sub)
			}
		}
	}
	for _, e := range f.Elems {
		add(e)
	}
	return out
}

// TestAuthEveryCommand: with requirepass, every command of the table and
// every subcommand answers NOAUTH before AUTH, except AUTH, HELLO, QUIT and
// RESET, exactly Redis 7.0's no_auth set.
func TestAuthEveryCommand(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t, "--requirepass", "s3cret")
	r := StartRedis(t, "--requirepass", "s3cret")
	authed := func(addr string) *RawConn {
		c := DialRaw(t, addr)
		if reply := c.Do("AUTH", "s3cret"); string(reply) != "+OK\r\n" {
			t.Fatalf("AUTH: %q", reply)
		}
		return c
	}
	ours := commandTable(t, authed(o.Addr))
	theirs := commandTable(t, authed(r))
	if len(ours) < 50 {
		t.Fatalf("COMMAND lists %d commands", len(ours))
	}
	unauth := DialRaw(t, o.Addr)
	for name, info := range ours {
		if theirs, ok := theirs[name]; ok && theirs.noAuth != info.noAuth {
			t.Errorf("%s: no_auth %v, Redis %v", name, info.noAuth, theirs.noAuth)
		}
		args := strings.Split(name, "|")
		n := max(info.arity, -info.arity)
		for len(args) < n {
			args = append(args, "x")
		}
		if _, isContainer := ours[name+"|help"]; isContainer {
			continue // its subcommands are checked one by one
		}
		if name == "quit" || name == "reset" || name == "hello" {
			continue // they run before AUTH; RESET/QUIT would change the connection
		}
		reply := string(unauth.Do(args...))
		want := "-NOAUTH Authentication required.\r\n"
		switch {
		case info.noAuth:
			if reply == want {
				t.Errorf("%s is no_auth but answered NOAUTH", name)
			}
			continue
		case name == "exec":
			want = "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n"
		}
		if reply != want {
			t.Errorf("%v before AUTH: %q", args, reply)
		}
	}
	for _, name := range []string{"auth", "hello", "quit", "reset"} {
		if !ours[name].noAuth {
			t.Errorf("%s is not no_auth", name)
		}
	}
}

// nonLoopbackIPv4 returns an IPv4 address of this machine that is not a
// loopback or link-local one, or nil.
func nonLoopbackIPv4() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip
			}
		}
	}
	return nil
}

// fromTo connects from the local address src to dst, sends PING and
// returns everything the server sent until it closed or went quiet.
func fromTo(t *testing.T, src net.IP, dst string) result {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: DefaultTimeout}
	nc, err := d.Dial("tcp", dst)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", dst, src, err)
	}
	defer nc.Close()
	_, _ = io.WriteString(nc, "PING\r\n")
	var res result
	buf := make([]byte, 4096)
	for {
		_ = nc.SetReadDeadline(time.Now().Add(quiet))
		n, err := nc.Read(buf)
		res.out = append(res.out, buf[:n]...)
		if err != nil {
			var ne net.Error
			res.closed = !(errors.As(err, &ne) && ne.Timeout())
			return res
		}
	}
}

// TestProtectedMode: with no password, a client from an address other
// than the loopback one gets Redis's DENIED error, byte for byte, and is
// disconnected; loopback clients are served; a password or
// `protected-mode no` lifts it. Everything stays on this machine: the
// server binds one of its own addresses and the client connects from it.
func TestProtectedMode(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIPv4()
	if ip == nil {
		t.Skip("no non-loopback IPv4 address on this machine (resp's TestProtectedDenied covers the decision)")
	}
	at := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		return net.JoinHostPort(ip.String(), port)
	}
	loopback := net.ParseIP("127.0.0.1")
	bind := []string{"--bind", "127.0.0.1", ip.String()}

	r, o := startPair(t, bind...)
	want := fromTo(t, ip, at(r))
	got := fromTo(t, ip, at(o))
	if !strings.HasPrefix(string(want.out), "-DENIED Redis is running in protected mode") || !want.closed {
		t.Fatalf("redis itself: %s", want)
	}
	if string(got.out) != string(want.out) || !got.closed {
		t.Errorf("from %s:\n\tredis:  %s\n\toncekv: %s", ip, want, got)
	}
	if res := fromTo(t, loopback, at(o)); string(res.out) != "+PONG\r\n" || res.closed {
		t.Errorf("from 127.0.0.1 to %s: %s", at(o), res)
	}
	if res := fromTo(t, loopback, o); string(res.out) != "+PONG\r\n" {
		t.Errorf("from 127.0.0.1 to %s: %s", o, res)
	}
	c := DialRaw(t, o)
	if reply := c.Do("CONFIG", "GET", "protected-mode"); string(reply) != "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n" {
		t.Errorf("CONFIG GET protected-mode: %q", reply)
	}
	if reply := c.Do("INFO", "stats"); !strings.Contains(string(reply), "rejected_connections:1") {
		t.Errorf("INFO stats does not count the refused client: %.2000s", reply)
	}

	off := StartOncekv(t, append(bind, "--protected-mode", "no")...)
	if res := fromTo(t, ip, at(off.Addr)); string(res.out) != "+PONG\r\n" || res.closed {
		t.Errorf("protected-mode no, from %s: %s", ip, res)
	}
	pass := StartOncekv(t, append(bind, "--requirepass", "pw")...)
	if res := fromTo(t, ip, at(pass.Addr)); string(res.out) != "-NOAUTH Authentication required.\r\n" || res.closed {
		t.Errorf("with a password, from %s: %s", ip, res)
	}
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, and a client certificate of another CA, as PEM files.
type testPKI struct {
	dir                       string
	caFile, certFile, keyFile string
	clientCert, strangerCert  tls.Certificate
	pool                      *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	serial := int64(1)
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ca := func(name string) (*x509.Certificate, *ecdsa.PrivateKey) {
		k := newKey()
		serial++
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, k
	}
	leaf := func(name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (certPEM, keyPEM string, cert tls.Certificate) {
		k := newKey()
		serial++
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM = write(name+".crt", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", kder)
		cert, err = tls.LoadX509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return certPEM, keyPEM, cert
	}
	caCert, caKey := ca("test CA")
	p.caFile = write("ca.crt", "CERTIFICATE", caCert.Raw)
	p.pool.AddCert(caCert)
	p.certFile, p.keyFile, _ = leaf("server", caCert, caKey, x509.ExtKeyUsageServerAuth)
	_, _, p.clientCert = leaf("client", caCert, caKey, x509.ExtKeyUsageClientAuth)
	otherCA, otherKey := ca("another CA")
	_, _, p.strangerCert = leaf("stranger", otherCA, otherKey, x509.ExtKeyUsageClientAuth)
	return p
}

// startTLS starts oncekv with a TLS port and the given tls-auth-clients.
func startTLS(t *testing.T, p *testPKI, authClients string) (plain, tlsAddr string) {
	t.Helper()
	var last string
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		args := []string{"--tls-port", strconv.Itoa(port), "--tls-cert-file", p.certFile, "--tls-key-file", p.keyFile,
			"--tls-ca-cert-file", p.caFile}
		if authClients != "" {
			args = append(args, "--tls-auth-clients", authClients)
		}
		o := StartOncekv(t, args...)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		for range 50 {
			nc, err := net.Dial("tcp", addr)
			if err == nil {
				nc.Close()
				return o.Addr, addr
			}
			time.Sleep(20 * time.Millisecond)
		}
		last = o.Output()
	}
	t.Fatalf("the TLS port never listened:\n%s", last)
	return "", ""
}

// tlsClient is a go-redis client over TLS that trusts pool and presents
// cert, if given, whatever CAs the server asks for.
func tlsClient(addr string, pool *x509.CertPool, cert ...tls.Certificate) *redis.Client {
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if len(cert) > 0 {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
	}
	return redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, TLSConfig: cfg,
	})
}

// TestTLS: go-redis over TLS with a CA the test makes (ECDSA, 127.0.0.1 IP
// SAN), with tls-auth-clients yes (a client certificate of that CA is
// required), optional and no.
func TestTLS(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	ctx := context.Background()
	works := func(t *testing.T, c *redis.Client) {
		t.Helper()
		defer c.Close()
		if err := c.Set(ctx, "tls-key", "over tls", 0).Err(); err != nil {
			t.Fatalf("SET over TLS: %v", err)
		}
		if v, err := c.Get(ctx, "tls-key").Result(); err != nil || v != "over tls" {
			t.Fatalf("GET over TLS: %q %v", v, err)
		}
	}
	refused := func(t *testing.T, c *redis.Client, why string) {
		t.Helper()
		defer c.Close()
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatalf("%s: PING over TLS succeeded", why)
		}
	}

	t.Run("auth-clients-yes", func(t *testing.T) {
		plain, addr := startTLS(t, p, "")
		works(t, tlsClient(addr, p.pool, p.clientCert))
		refused(t, tlsClient(addr, p.pool), "no client certificate")
		refused(t, tlsClient(addr, p.pool, p.strangerCert), "a client certificate of another CA")
		// The server's certificate is checked by the client too.
		refused(t, tlsClient(addr, x509.NewCertPool(), p.clientCert), "an unknown server CA")
		// Plain RESP on the TLS port: the handshake fails and the
		// connection is closed; the plain port is unaffected.
		nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(nc, "PING\r\n")
		b, err := io.ReadAll(nc)
		nc.Close()
		if strings.Contains(string(b), "PONG") || (err != nil && !isReset(err)) {
			t.Errorf("plain PING on the TLS port: %q %v", b, err)
		}
		c := DialRaw(t, plain)
		if reply := c.Do("GET", "tls-key"); string(reply) != "$8\r\nover tls\r\n" {
			t.Errorf("GET on the plain port: %q", reply)
		}
		if reply := c.Do("CONFIG", "GET", "tls-auth-clients"); string(reply) != "*2\r\n$16\r\ntls-auth-clients\r\n$3\r\nyes\r\n" {
			t.Errorf("CONFIG GET tls-auth-clients: %q", reply)
		}
	})
	t.Run("auth-clients-optional", func(t *testing.T) {
		_, addr := startTLS(t, p, "optional")
		works(t, tlsClient(addr, p.pool))
		works(t, tlsClient(addr, p.pool, p.clientCert))
		refused(t, tlsClient(addr, p.pool, p.strangerCert), "a client certificate of another CA")
	})
	t.Run("auth-clients-no", func(t *testing.T) {
		_, addr := startTLS(t, p, "no")
		works(t, tlsClient(addr, p.pool))
	})
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "broken pipe")
}

// TestRenameCommand: rename-command on the command line, as Redis takes
// it: a renamed command answers under its new name only, a disabled one
// (empty new name) is an unknown command; compared with redis-server
// started the same way. The config-file form is tested in internal/app.
func TestRenameCommand(t *testing.T) {
	t.Parallel()
	r, o := startPair(t, "--rename-command", "FLUSHALL", "", "--rename-command", "config", "MYCONFIG",
		"--rename-command", "GET", "fetch")
	for _, ex := range []exchange{
		{name: "disabled", chunks: []string{"FLUSHALL\r\nflushall ASYNC\r\n"}},
		{name: "old-name", chunks: []string{"CONFIG GET databases\r\nGET k\r\n"}},
		{name: "new-name", chunks: []string{"SET k v\r\nMYCONFIG GET databases\r\nmyconfig get maxclients\r\nFETCH k\r\nfetch k\r\n"}},
		{name: "new-name-wrong-arity", chunks: []string{"FETCH\r\nMYCONFIG\r\nMYCONFIG NOPE\r\n"}},
		{name: "in-multi", chunks: []string{"MULTI\r\nFETCH k\r\nGET k\r\nEXEC\r\nMULTI\r\nFETCH k\r\nEXEC\r\n"}},
	} {
		compareExchange(t, r, o, ex)
	}
}

// TestProxyRenameCommand: the proxy's own rename-command, compared with
// redis-server started the same way. A disabled command inside MULTI is
// an unknown command there too, and EXEC then aborts.
func TestProxyRenameCommand(t *testing.T) {
	t.Parallel()
	renames := []string{"--rename-command", "FLUSHALL", "", "--rename-command", "GET", "fetch"}
	r := StartRedis(t, renames...)
	o := startProxy(t, "redis://"+testredis.Standalone(t).Addr(), renames...)
	for _, ex := range []exchange{
		{name: "disabled", chunks: []string{"FLUSHALL\r\nflushall ASYNC\r\n"}},
		{name: "new-name", chunks: []string{"SET k v\r\nFETCH k\r\nGET k\r\n"}},
		{name: "disabled-in-multi", chunks: []string{"MULTI\r\nSET zz 1\r\nFLUSHALL\r\nEXEC\r\nEXISTS zz\r\n"}},
		{name: "old-name-in-multi", chunks: []string{"MULTI\r\nFETCH k\r\nGET k\r\nEXEC\r\n"}},
	} {
		compareExchange(t, r, o.Addr, ex)
	}
}
