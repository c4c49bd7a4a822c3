package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestEnvName(t *testing.T) {
	for dir, want := range map[string]string{
		"requirepass":               "ONCEKV_REQUIREPASS",
		"appendfsync":               "ONCEKV_APPENDFSYNC",
		"port":                      "ONCEKV_PORT",
		"dir":                       "ONCEKV_DIR",
		"proto-max-bulk-len":        "ONCEKV_PROTO_MAX_BULK_LEN",
		"client-query-buffer-limit": "ONCEKV_CLIENT_QUERY_BUFFER_LIMIT",
	} {
		if got := EnvName(dir); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", dir, got, want)
		}
	}
}

// Every directive the environment knows is one Set accepts, and every
// directive CONFIG GET shows (but the fixed ones) can be set from the
// environment.
func TestEnvKnowsEveryDirective(t *testing.T) {
	known := map[string]bool{}
	for _, name := range directiveNames {
		known[name] = true
		c := Default()
		if err := c.Set(name, []string{"x"}); errors.Is(err, ErrUnknown) {
			t.Errorf("directiveNames has %q, which Set does not know", name)
		}
	}
	for name := range Default().Directives() {
		switch name {
		case "maxmemory", "maxmemory-policy":
			continue
		}
		if !known[Canonical(name)] { // an old name: its directive's variable
			t.Errorf("CONFIG GET shows %q, which no ONCEKV_ variable sets", name)
		}
	}
}

// The precedence is file < environment < flags, for each directive
// separately.
func TestLoadPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "oncekv.conf")
	conf := "port 7000\nrequirepass filepass\ntimeout 10\nmaxclients 50\nloglevel warning\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=/usr/bin",
		"ONCEKV_PORT=7001",
		"ONCEKV_REQUIREPASS=env pass with spaces and a \" quote",
		"ONCEKV_TIMEOUT=20",
		"ONCEKV_BIND=127.0.0.1 \"::1\"",
		"ONCEKV_APPENDFSYNC=always",
		"ONCEKV_PROTECTED_MODE=no",
		"ONCEKV_PROTO_MAX_BULK_LEN=2mb",
		"ONCEKV_DIR=", // empty: unset
	}
	got, err := Load([]string{file, "--port", "7002", "--loglevel", "debug"}, env)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Port = 7002                                         // flag over env over file
	want.RequirePass = "env pass with spaces and a \" quote" // env over file, taken as it is
	want.Timeout = 20                                        // env over file
	want.MaxClients = 50                                     // file only
	want.LogLevel = "debug"                                  // flag over file
	want.Bind = []string{"127.0.0.1", "::1"}                 // several words
	want.AppendFsync, want.ProtectedMode = "always", false   // env only
	want.ProtoMaxBulkLen = 2 << 20                           // env only
	want.ConfigFile = file                                   // INFO server config_file
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}

	// Parse ignores the environment; Load without one is Parse.
	p, err := Parse([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	if p.Port != 7000 || p.RequirePass != "filepass" {
		t.Fatalf("Parse: port %d requirepass %q, want the file's", p.Port, p.RequirePass)
	}
}

func TestLoadEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want string
	}{
		{"ONCEKV_PORT=abc", `environment ONCEKV_PORT: directive "port": "abc" is not an integer`},
		{"ONCEKV_APPENDFSYNC=sometimes", `appendfsync must be always, everysec or no, not "sometimes"`},
		{"ONCEKV_BIND=\"127.0.0.1", "environment ONCEKV_BIND: unbalanced quotes"},
		{"ONCEKV_PROTECTED_MODE=maybe", `environment ONCEKV_PROTECTED_MODE: directive "protected-mode": argument must be 'yes' or 'no', not "maybe"`},
	} {
		_, err := Load(nil, []string{tc.env})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.env, err, tc.want)
		}
	}
	// A flag does not rescue a bad environment value: the error names it.
	if _, err := Load([]string{"--port", "1"}, []string{"ONCEKV_PORT=abc"}); err == nil || !strings.Contains(err.Error(), "ONCEKV_PORT") {
		t.Errorf("bad ONCEKV_PORT under --port: err = %v", err)
	}
}

func TestUnknownEnv(t *testing.T) {
	env := []string{"ONCEKV_REQUIREPAS=typo", "ONCEKV_PORT=1", "ONCEKV_BIN=/tmp/x", "HOME=/root", "ONCEKV_SAVE="}
	want := []string{"ONCEKV_BIN", "ONCEKV_REQUIREPAS"}
	if got := UnknownEnv(env); !reflect.DeepEqual(got, want) {
		t.Fatalf("UnknownEnv = %v, want %v", got, want)
	}
	// Unknown variables are not an error: they are another program's.
	if _, err := Load(nil, env); err != nil {
		t.Fatal(err)
	}
}
