package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLimitsProtectedModeTLSRenameDirectives(t *testing.T) {
	d := Default()
	if d.ProtoMaxBulkLen != 512<<20 || d.ClientQueryBufferLimit != 1<<30 || !d.ProtectedMode || d.TLSAuthClients != "yes" || d.TLSPort != 0 {
		t.Fatalf("defaults: %+v", d)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "oncekv.conf")
	conf := "proto-max-bulk-len 2mb\nclient-query-buffer-limit 64mb\nprotected-mode no\n" +
		"rename-command FLUSHALL \"\"\nrename-command CONFIG \"MY CONFIG\"\n" +
		"tls-port 6380\ntls-cert-file /c.crt\ntls-key-file /c.key\ntls-ca-cert-file /ca.crt\ntls-auth-clients optional\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]string{file, "--rename-command", "GET", "", "--protected-mode", "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ProtoMaxBulkLen != 2<<20 || c.ClientQueryBufferLimit != 64<<20 || !c.ProtectedMode {
		t.Errorf("limits and protected-mode: %+v", c)
	}
	want := []Rename{{"FLUSHALL", ""}, {"CONFIG", "MY CONFIG"}, {"GET", ""}}
	if !reflect.DeepEqual(c.Renames, want) {
		t.Errorf("renames %q, want %q", c.Renames, want)
	}
	if c.TLSPort != 6380 || c.TLSCertFile != "/c.crt" || c.TLSKeyFile != "/c.key" || c.TLSCACertFile != "/ca.crt" || c.TLSAuthClients != "optional" {
		t.Errorf("tls: %+v", c)
	}
	if got := c.TLSAddrs(); !reflect.DeepEqual(got, []string{"127.0.0.1:6380"}) {
		t.Errorf("TLS addresses %q", got)
	}
	dirs := c.Directives()
	for k, v := range map[string]string{"proto-max-bulk-len": "2097152", "client-query-buffer-limit": "67108864",
		"protected-mode": "yes", "tls-port": "6380", "tls-auth-clients": "optional", "tls-ca-cert-file": "/ca.crt"} {
		if dirs[k] != v {
			t.Errorf("CONFIG GET %s = %q, want %q", k, dirs[k], v)
		}
	}

	for _, bad := range [][]string{
		{"--proto-max-bulk-len", "1000"},
		{"--client-query-buffer-limit", "1kb"},
		{"--protected-mode", "maybe"},
		{"--tls-auth-clients", "sometimes"},
		{"--tls-port", "6380"},
		{"--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k"},
		{"--tls-port", "70000"},
		{"--rename-command", "GET"},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", strings.Join(bad, " "))
		}
	}
	if _, err := Parse([]string{"--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-auth-clients", "no"}); err != nil {
		t.Errorf("TLS without client certificates needs no CA: %v", err)
	}
}
