package commands

//go:generate go run ../internal/gendocs -names docs_redis70.txt -out docs_redis70.go

// docs is what COMMAND DOCS tells about each command, by lower-case name
// (a subcommand as "container|sub"). attachDocs copies an entry into every
// registered command whose Doc is empty; a test fails when a registered
// command has no entry here.
//
// The commands Redis 7.0 has are documented in its words (CONTRACT.md:
// where it is silent, do what Redis does): their entries are redisDocs (docs_redis70.go), generated
// from what redis-server 7.0 answers for the names in docs_redis70.txt;
// add a command's name there and run `go generate ./commands/` (with a
// redis-server 7.0 on the PATH). The entries below are those of the
// commands Redis 7.0 lacks, in the same shape: the ONCE commands, and
// two of Redis 7.2 in its words.
var docs = map[string]Doc{
	// Redis 7.2's, which go-redis sends (README: differences).
	"client|setinfo": {
		Summary: "Records the name or version of the client library of the connection.", Since: "7.2.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOneOf("attr",
			docWithToken("LIB-NAME", docString("libname")),
			docWithToken("LIB-VER", docString("libver")),
		)},
	},
	"client|no-touch": {
		Summary: "Sets whether the commands of the connection update the last access time of keys.", Since: "7.2.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOnOff()},
	},

	// once
	"once.claim": {
		Summary: "Claims a key to run its function, or returns the answer kept for it.", Since: "1.0.0",
		Group: "once", Complexity: "O(1)",
		Args: []Arg{
			docKey("key", 0),
			docOptional(docWithToken("LEASE", docInteger("ms"))),
			docOptional(docWithToken("WAIT", docInteger("ms"))),
			docOptional(docWithToken("FINGERPRINT", docString("fp"))),
		},
	},
	"once.complete": {
		Summary: "Ends a claimed run with its answer, kept for later claims.", Since: "1.0.0",
		Group: "once", Complexity: "O(N) where N is the number of waiting callers",
		Args: []Arg{
			docKey("key", 0), docInteger("token"), docString("answer"),
			docOptional(docWithToken("KEEP", docInteger("ms"))),
		},
	},
	"once.abort": {
		Summary: "Ends a claimed run as failed: the key becomes free and keeps nothing.", Since: "1.0.0",
		Group: "once", Complexity: "O(N) where N is the number of waiting callers",
		Args: []Arg{docKey("key", 0), docInteger("token"), docOptional(docString("message"))},
	},
	"once.extend": {
		Summary: "Extends the lease of a claimed run.", Since: "1.0.0",
		Group: "once", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("token"), docWithToken("LEASE", docInteger("ms"))},
	},
	"once.wait": {
		Summary: "Waits for the answer of a key without claiming it.", Since: "1.0.0",
		Group: "once", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docOptional(docWithToken("TIMEOUT", docInteger("ms")))},
	},
	"once.status": {
		Summary: "Returns the state of a ONCE key.", Since: "1.0.0",
		Group: "once", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
}

func init() {
	for name, d := range redisDocs {
		if _, dup := docs[name]; dup {
			panic("commands: " + name + " documented twice (docs.go and docs_redis70.go)")
		}
		docs[name] = d
	}
}

func docKey(name string, spec int) Arg { return Arg{Name: name, Type: ArgKey, KeySpec: spec} }

func docString(name string) Arg { return Arg{Name: name, Type: ArgString} }

func docInteger(name string) Arg { return Arg{Name: name, Type: ArgInteger} }

// docToken is a bare keyword argument.
func docToken(name, token string) Arg { return Arg{Name: name, Type: ArgPureToken, Token: token} }

func docOneOf(name string, args ...Arg) Arg { return Arg{Name: name, Type: ArgOneOf, Args: args} }

func docOptional(a Arg) Arg { a.Optional = true; return a }

func docWithToken(token string, a Arg) Arg { a.Token = token; return a }

func docOnOff() Arg {
	return docOneOf("enabled", docToken("on", "ON"), docToken("off", "OFF"))
}
