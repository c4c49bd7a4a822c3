package commands

import "testing"

// TestLookupFoldsCase checks that a command is found by its name in any
// case, including a name longer than Lookup's folding buffer: the usual
// hardening step renames CONFIG to a 40-character random string
// (rename-command), and Redis compares names without regard to case.
func TestLookupFoldsCase(t *testing.T) {
	tab := NewTable()
	tab.Register(&Command{Name: "get", Arity: 2}, &Command{Name: "config", Arity: -2})
	const long = "b840fc02d524045429941cc15f59e41cb7be6c52"
	if err := tab.Rename("config", long); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string // want "": no command
	}{
		{"get", "get"},
		{"GET", "get"},
		{"gEt", "get"},
		{long, "config"},
		{"B840FC02D524045429941CC15F59E41CB7BE6C52", "config"},
		{"config", ""},
		{"CONFIG", ""},
		{long + "x", ""},
		{"", ""},
		{"g\xc3\x89t", ""},
	} {
		c := tab.Lookup([]byte(tc.name))
		got := ""
		if c != nil {
			got = c.Name
		}
		if got != tc.want {
			t.Errorf("Lookup(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestConnectionRemembersItsLastCommandName: a connection's last command
// name answers its next command without the table's lookup only when the
// name is the same bytes; a name that shares a prefix with it, differs in
// case, is unknown or too long to remember is looked up as before, in
// the order a client may send them.
func TestConnectionRemembersItsLastCommandName(t *testing.T) {
	tab := NewTable()
	tab.Register(&Command{Name: "get", Arity: 2}, &Command{Name: "getset", Arity: 3},
		&Command{Name: "set", Arity: -3}, &Command{Name: "config", Arity: -2})
	const long = "b840fc02d524045429941cc15f59e41cb7be6c52"
	if err := tab.Rename("config", long); err != nil {
		t.Fatal(err)
	}
	var l local
	for i, tc := range []struct {
		name, want string // want "": no command
	}{
		{"GET", "get"}, {"GET", "get"}, {"GETSET", "getset"}, {"GET", "get"},
		{"GE", ""}, {"GET", "get"}, {"get", "get"}, {"SET", "set"},
		{"SETX", ""}, {"SET", "set"}, {long, "config"}, {long, "config"},
		{"SET", "set"}, {long + "x", ""}, {"", ""}, {"SET", "set"},
	} {
		c := l.lookup(tab, []byte(tc.name))
		got := ""
		if c != nil {
			got = c.Name
		}
		if got != tc.want {
			t.Errorf("command %d, %q: got %q, want %q", i, tc.name, got, tc.want)
		}
	}
	// Without a connection (EXEC's queued commands) it is the table's.
	if c := (*local)(nil).lookup(tab, []byte("GETSET")); c == nil || c.Name != "getset" {
		t.Errorf("lookup without a connection: %v", c)
	}
}
