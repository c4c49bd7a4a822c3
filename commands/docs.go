package commands

// docs is what COMMAND DOCS tells about each command, by lower-case name
// (a subcommand as "container|sub"). attachDocs copies an entry into every
// registered command whose Doc is empty; a test fails when a registered
// command has no entry here.
//
// Groups, argument names, types and tokens follow Redis 7 so that clients
// (redis-cli's hints and help among them) show the usual syntax.
var docs = map[string]Doc{
	// pubsub, in Redis 7.0's words
	"subscribe": {
		Summary: "Listen for messages published to the given channels", Since: "2.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of channels to subscribe to.",
		Args:       []Arg{docMultiple(docString("channel"))},
	},
	"unsubscribe": {
		Summary: "Stop listening for messages posted to the given channels", Since: "2.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of clients already subscribed to a channel.",
		Args:       []Arg{docOptional(docMultiple(docString("channel")))},
	},
	"psubscribe": {
		Summary: "Listen for messages published to channels matching the given patterns", Since: "2.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
		Args:       []Arg{docMultiple(docBlock("pattern", Arg{Name: "pattern", Type: ArgPattern}))},
	},
	"punsubscribe": {
		Summary: "Stop listening for messages posted to channels matching the given patterns", Since: "2.0.0", Group: "pubsub",
		Complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
		Args:       []Arg{docOptional(docMultiple(Arg{Name: "pattern", Type: ArgPattern}))},
	},
	"ssubscribe": {
		Summary: "Listen for messages published to the given shard channels", Since: "7.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of shard channels to subscribe to.",
		Args:       []Arg{docMultiple(docString("shardchannel"))},
	},
	"sunsubscribe": {
		Summary: "Stop listening for messages posted to the given shard channels", Since: "7.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
		Args:       []Arg{docOptional(docMultiple(docString("shardchannel")))},
	},
	"publish": {
		Summary: "Post a message to a channel", Since: "2.0.0", Group: "pubsub",
		Complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
		Args:       []Arg{docString("channel"), docString("message")},
	},
	"spublish": {
		Summary: "Post a message to a shard channel", Since: "7.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
		Args:       []Arg{docString("shardchannel"), docString("message")},
	},
	"pubsub": {
		Summary: "A container for Pub/Sub commands", Since: "2.8.0", Group: "pubsub", Complexity: "Depends on subcommand.",
	},
	"pubsub|channels": {
		Summary: "List active channels", Since: "2.8.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
		Args:       []Arg{docOptional(Arg{Name: "pattern", Type: ArgPattern})},
	},
	"pubsub|numsub": {
		Summary: "Get the count of subscribers for channels", Since: "2.8.0", Group: "pubsub",
		Complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
		Args:       []Arg{docOptional(docMultiple(docString("channel")))},
	},
	"pubsub|numpat": {
		Summary: "Get the count of unique patterns pattern subscriptions", Since: "2.8.0", Group: "pubsub", Complexity: "O(1)",
	},
	"pubsub|shardchannels": {
		Summary: "List active shard channels", Since: "7.0.0", Group: "pubsub",
		Complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
		Args:       []Arg{docOptional(Arg{Name: "pattern", Type: ArgPattern})},
	},
	"pubsub|shardnumsub": {
		Summary: "Get the count of subscribers for shard channels", Since: "7.0.0", Group: "pubsub",
		Complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
		Args:       []Arg{docOptional(docMultiple(docString("shardchannel")))},
	},
	"pubsub|help": {
		Summary: "Show helpful text about the different subcommands", Since: "6.2.0", Group: "pubsub", Complexity: "O(1)",
	},

	// string
	"get": {
		Summary: "Returns the string value of a key.", Since: "1.0.0", Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"set": {
		Summary: "Sets the string value of a key, with an optional condition and expiration.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{
			docKey("key", 0), docString("value"),
			docOptional(docOneOf("condition", docToken("nx", "NX"), docToken("xx", "XX"))),
			docOptional(docToken("get", "GET")),
			docExpiration(docToken("keepttl", "KEEPTTL")),
		},
	},
	"setnx": {
		Summary: "Sets the string value of a key only when the key does not exist.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docString("value")},
	},
	"setex": {
		Summary: "Sets the string value of a key and its time to live in seconds.", Since: "2.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("seconds"), docString("value")},
	},
	"psetex": {
		Summary: "Sets the string value of a key and its time to live in milliseconds.", Since: "2.6.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("milliseconds"), docString("value")},
	},
	"getset": {
		Summary: "Sets the string value of a key and returns its previous value.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		DocFlags: []string{"deprecated"}, DeprecatedSince: "6.2.0", ReplacedBy: "`SET` with the `!GET` argument",
		Args: []Arg{docKey("key", 0), docString("value")},
	},
	"getdel": {
		Summary: "Returns the string value of a key and deletes the key.", Since: "6.2.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"getex": {
		Summary: "Returns the string value of a key and optionally changes its expiration.", Since: "6.2.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docExpiration(docToken("persist", "PERSIST"))},
	},
	"mget": {
		Summary: "Returns the string values of one or more keys.", Since: "1.0.0",
		Group: "string", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docKey("key", 0))},
	},
	"mset": {
		Summary: "Sets the string values of one or more keys.", Since: "1.0.1",
		Group: "string", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docBlock("data", docKey("key", 0), docString("value")))},
	},
	"msetnx": {
		Summary: "Sets the string values of one or more keys only when none of them exists.", Since: "1.0.1",
		Group: "string", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docBlock("data", docKey("key", 0), docString("value")))},
	},
	"append": {
		Summary: "Appends a string to the value of a key, creating the key when it does not exist.", Since: "2.0.0",
		Group: "string", Complexity: "O(1) amortized",
		Args: []Arg{docKey("key", 0), docString("value")},
	},
	"strlen": {
		Summary: "Returns the length of the string value of a key.", Since: "2.2.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"getrange": {
		Summary: "Returns a substring of the string value of a key.", Since: "2.4.0",
		Group: "string", Complexity: "O(N) where N is the length of the returned string",
		Args: []Arg{docKey("key", 0), docInteger("start"), docInteger("end")},
	},
	"substr": {
		Summary: "Returns a substring of the string value of a key (the old name of GETRANGE).", Since: "1.0.0",
		Group: "string", Complexity: "O(N) where N is the length of the returned string",
		DocFlags: []string{"deprecated"}, DeprecatedSince: "2.0.0", ReplacedBy: "`GETRANGE`",
		Args: []Arg{docKey("key", 0), docInteger("start"), docInteger("end")},
	},
	"setrange": {
		Summary: "Overwrites part of the string value of a key from an offset on.", Since: "2.2.0",
		Group: "string", Complexity: "O(1), plus O(M) to copy a value of length M",
		Args: []Arg{docKey("key", 0), docInteger("offset"), docString("value")},
	},
	"incr": {
		Summary: "Adds one to the integer value of a key.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"incrby": {
		Summary: "Adds an integer to the integer value of a key.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("increment")},
	},
	"decr": {
		Summary: "Subtracts one from the integer value of a key.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"decrby": {
		Summary: "Subtracts an integer from the integer value of a key.", Since: "1.0.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("decrement")},
	},
	"incrbyfloat": {
		Summary: "Adds a floating-point number to the numeric value of a key.", Since: "2.6.0",
		Group: "string", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), {Name: "increment", Type: ArgDouble}},
	},

	// generic
	"del": {
		Summary: "Deletes one or more keys.", Since: "1.0.0",
		Group: "generic", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docKey("key", 0))},
	},
	"unlink": {
		Summary: "Deletes one or more keys without blocking.", Since: "4.0.0",
		Group: "generic", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docKey("key", 0))},
	},
	"exists": {
		Summary: "Counts how many of the given keys exist.", Since: "1.0.0",
		Group: "generic", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docKey("key", 0))},
	},
	"expire": {
		Summary: "Sets the time to live of a key in seconds.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("seconds"), docExpireCondition()},
	},
	"pexpire": {
		Summary: "Sets the time to live of a key in milliseconds.", Since: "2.6.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("milliseconds"), docExpireCondition()},
	},
	"expireat": {
		Summary: "Sets the expiration of a key as a Unix time in seconds.", Since: "1.2.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), {Name: "unix-time-seconds", Type: ArgUnixTime}, docExpireCondition()},
	},
	"pexpireat": {
		Summary: "Sets the expiration of a key as a Unix time in milliseconds.", Since: "2.6.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), {Name: "unix-time-milliseconds", Type: ArgUnixTime}, docExpireCondition()},
	},
	"ttl": {
		Summary: "Returns the remaining time to live of a key in seconds.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"pttl": {
		Summary: "Returns the remaining time to live of a key in milliseconds.", Since: "2.6.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"expiretime": {
		Summary: "Returns the expiration of a key as a Unix time in seconds.", Since: "7.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"pexpiretime": {
		Summary: "Returns the expiration of a key as a Unix time in milliseconds.", Since: "7.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"persist": {
		Summary: "Removes the expiration of a key.", Since: "2.2.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"type": {
		Summary: "Returns the type of the value stored at a key.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"keys": {
		Summary: "Returns the names of the keys that match a pattern.", Since: "1.0.0",
		Group: "generic", Complexity: "O(N) where N is the number of keys in the database",
		Args: []Arg{{Name: "pattern", Type: ArgPattern}},
	},
	"scan": {
		Summary: "Iterates over the names of the keys of the database.", Since: "2.8.0",
		Group: "generic", Complexity: "O(1) per call, O(N) for a complete iteration",
		Args: []Arg{
			docInteger("cursor"),
			docOptional(Arg{Name: "pattern", Type: ArgPattern, Token: "MATCH"}),
			docOptional(Arg{Name: "count", Type: ArgInteger, Token: "COUNT"}),
			docOptional(Arg{Name: "type", Type: ArgString, Token: "TYPE"}),
		},
	},
	"rename": {
		Summary: "Renames a key, replacing any key that has the new name.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docKey("newkey", 1)},
	},
	"renamenx": {
		Summary: "Renames a key only when no key has the new name.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docKey("newkey", 1)},
	},
	"dump": {
		Summary: "Returns a serialized representation of the value stored at a key.", Since: "2.6.0",
		Group: "generic", Complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
		Args: []Arg{docKey("key", 0)},
	},
	"restore": {
		Summary: "Creates a key from the serialized representation of a value.", Since: "2.6.0",
		Group: "generic", Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
		Args: []Arg{
			docKey("key", 0), docInteger("ttl"), docString("serialized-value"),
			docOptional(docToken("replace", "REPLACE")), docOptional(docToken("absttl", "ABSTTL")),
			docOptional(docWithToken("IDLETIME", docInteger("seconds"))),
			docOptional(docWithToken("FREQ", docInteger("frequency"))),
		},
	},
	"randomkey": {
		Summary: "Returns the name of a random key of the database.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
	},
	"touch": {
		Summary: "Updates the last access time of keys and counts those that exist.", Since: "3.2.1",
		Group: "generic", Complexity: "O(N) where N is the number of keys",
		Args: []Arg{docMultiple(docKey("key", 0))},
	},
	"copy": {
		Summary: "Copies the value of a key to a new key, with its time to live.", Since: "6.2.0",
		Group: "generic", Complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
		Args: []Arg{
			docKey("source", 0), docKey("destination", 1),
			docOptional(Arg{Name: "destination-db", Type: ArgInteger, Token: "DB"}),
			docOptional(docToken("replace", "REPLACE")),
		},
	},
	"move": {
		Summary: "Moves a key to another database.", Since: "1.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0), docInteger("db")},
	},
	"swapdb": {
		Summary: "Swaps two databases.", Since: "4.0.0",
		Group: "server", Complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
		Args: []Arg{docInteger("index1"), docInteger("index2")},
	},
	"object": {
		Summary: "A container for object introspection commands.", Since: "2.2.3",
		Group: "generic", Complexity: "Depends on subcommand.",
	},
	"object|encoding": {
		Summary: "Returns the internal encoding of the value of a key.", Since: "2.2.3",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"object|freq": {
		Summary: "Returns the logarithmic access frequency counter of the value of a key.", Since: "4.0.0",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"object|idletime": {
		Summary: "Returns the time since the value of a key was last accessed.", Since: "2.2.3",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"object|refcount": {
		Summary: "Returns the number of references to the value of a key.", Since: "2.2.3",
		Group: "generic", Complexity: "O(1)",
		Args: []Arg{docKey("key", 0)},
	},
	"object|help": {
		Summary: "Lists the OBJECT subcommands.", Since: "6.2.0",
		Group: "generic", Complexity: "O(1)",
	},

	// connection
	"ping": {
		Summary: "Checks that the server answers: replies PONG, or the given message.", Since: "1.0.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOptional(docString("message"))},
	},
	"echo": {
		Summary: "Replies with the given string.", Since: "1.0.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docString("message")},
	},
	"quit": {
		Summary: "Closes the connection.", Since: "1.0.0",
		Group: "connection", Complexity: "O(1)",
	},
	"select": {
		Summary: "Changes the database of the connection.", Since: "1.0.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docInteger("index")},
	},
	"hello": {
		Summary: "Negotiates the protocol version, optionally authenticating and naming the connection.", Since: "6.0.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOptional(docBlock("arguments",
			docInteger("protover"),
			docOptional(docWithToken("AUTH", docBlock("username-password", docString("username"), docString("password")))),
			docOptional(docWithToken("SETNAME", docString("clientname"))),
		))},
	},
	"auth": {
		Summary: "Authenticates the connection.", Since: "1.0.0",
		Group: "connection", Complexity: "O(N) where N is the number of passwords of the user",
		Args: []Arg{docOptional(docString("username")), docString("password")},
	},
	"reset": {
		Summary: "Resets the state of the connection.", Since: "6.2.0",
		Group: "connection", Complexity: "O(1)",
	},
	"client": {
		Summary: "A container for commands about client connections.", Since: "2.4.0",
		Group: "connection", Complexity: "Depends on subcommand.",
	},
	"client|setname": {
		Summary: "Sets the name of the connection.", Since: "2.6.9",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docString("connection-name")},
	},
	"client|getname": {
		Summary: "Returns the name of the connection.", Since: "2.6.9",
		Group: "connection", Complexity: "O(1)",
	},
	"client|id": {
		Summary: "Returns the ID of the connection.", Since: "5.0.0",
		Group: "connection", Complexity: "O(1)",
	},
	"client|setinfo": {
		Summary: "Records the name or version of the client library of the connection.", Since: "7.2.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOneOf("attr",
			docWithToken("LIB-NAME", docString("libname")),
			docWithToken("LIB-VER", docString("libver")),
		)},
	},
	"client|info": {
		Summary: "Returns information about the connection.", Since: "6.2.0",
		Group: "connection", Complexity: "O(1)",
	},
	"client|list": {
		Summary: "Lists the client connections.", Since: "2.4.0",
		Group: "connection", Complexity: "O(N) where N is the number of client connections",
		Args: []Arg{
			docOptional(docWithToken("TYPE", docOneOf("client-type",
				docToken("normal", "NORMAL"), docToken("master", "MASTER"),
				docToken("replica", "REPLICA"), docToken("pubsub", "PUBSUB")))),
			docOptional(docWithToken("ID", docBlock("id", docMultiple(docInteger("client-id"))))),
		},
	},
	"client|kill": {
		Summary: "Closes client connections.", Since: "2.4.0",
		Group: "connection", Complexity: "O(N) where N is the number of client connections",
		Args: []Arg{docOneOf("filter",
			docString("ip:port"),
			docMultiple(docOneOf("new-format",
				docOptional(docWithToken("ID", docInteger("client-id"))),
				docOptional(docWithToken("TYPE", docOneOf("client-type",
					docToken("normal", "NORMAL"), docToken("master", "MASTER"), docToken("slave", "SLAVE"),
					docToken("replica", "REPLICA"), docToken("pubsub", "PUBSUB")))),
				docOptional(docWithToken("USER", docString("username"))),
				docOptional(docWithToken("ADDR", docString("ip:port"))),
				docOptional(docWithToken("LADDR", docString("ip:port"))),
				docOptional(docWithToken("SKIPME", docString("yes/no"))),
			)),
		)},
	},
	"client|pause": {
		Summary: "Suspends commands processing.", Since: "2.9.50",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{
			docInteger("timeout"),
			docOptional(docOneOf("mode", docToken("write", "WRITE"), docToken("all", "ALL"))),
		},
	},
	"client|unpause": {
		Summary: "Resumes processing commands from paused clients.", Since: "6.2.0",
		Group: "connection", Complexity: "O(N) Where N is the number of paused clients",
	},
	"client|unblock": {
		Summary: "Unblocks a client blocked by a blocking command from a different connection.", Since: "5.0.0",
		Group: "connection", Complexity: "O(log N) where N is the number of client connections",
		Args: []Arg{
			docInteger("client-id"),
			docOptional(docOneOf("timeout_error", docToken("timeout", "TIMEOUT"), docToken("error", "ERROR"))),
		},
	},
	"client|reply": {
		Summary: "Sets whether the server replies to the commands of the connection.", Since: "3.2.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOneOf("action", docToken("on", "ON"), docToken("off", "OFF"), docToken("skip", "SKIP"))},
	},
	"client|help": {
		Summary: "Lists the CLIENT subcommands.", Since: "5.0.0",
		Group: "connection", Complexity: "O(1)",
	},
	"client|no-evict": {
		Summary: "Sets the client eviction mode of the connection.", Since: "7.0.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOnOff()},
	},
	"client|no-touch": {
		Summary: "Sets whether the commands of the connection update the last access time of keys.", Since: "7.2.0",
		Group: "connection", Complexity: "O(1)",
		Args: []Arg{docOnOff()},
	},

	// server
	"info": {
		Summary: "Returns information and statistics about the server.", Since: "1.0.0",
		Group: "server", Complexity: "O(1)",
		Args: []Arg{docOptional(docMultiple(docString("section")))},
	},
	"dbsize": {
		Summary: "Returns the number of keys in the database.", Since: "1.0.0",
		Group: "server", Complexity: "O(1)",
	},
	"flushdb": {
		Summary: "Deletes every key of the database.", Since: "1.0.0",
		Group: "server", Complexity: "O(N) where N is the number of keys in the database",
		Args: []Arg{docFlushMode()},
	},
	"flushall": {
		Summary: "Deletes every key of every database.", Since: "1.0.0",
		Group: "server", Complexity: "O(N) where N is the number of keys in all databases",
		Args: []Arg{docFlushMode()},
	},
	"time": {
		Summary: "Returns the time of the server.", Since: "2.6.0",
		Group: "server", Complexity: "O(1)",
	},
	"config": {
		Summary: "A container for commands about the configuration of the server.", Since: "2.0.0",
		Group: "server", Complexity: "Depends on subcommand.",
	},
	"config|get": {
		Summary: "Returns the values of configuration parameters.", Since: "2.0.0",
		Group: "server", Complexity: "O(N) where N is the number of parameters asked for",
		Args: []Arg{docMultiple(docString("parameter"))},
	},
	"config|set": {
		Summary: "Sets configuration parameters.", Since: "2.0.0",
		Group: "server", Complexity: "O(N) where N is the number of parameters set",
		Args: []Arg{docMultiple(docBlock("parameter-value", docString("parameter"), docString("value")))},
	},
	"config|resetstat": {
		Summary: "Resets the statistics that INFO reports.", Since: "2.0.0",
		Group: "server", Complexity: "O(1)",
	},
	"config|rewrite": {
		Summary: "Rewrites the configuration file with the running configuration.", Since: "2.8.0",
		Group: "server", Complexity: "O(1)",
	},
	"config|help": {
		Summary: "Lists the CONFIG subcommands.", Since: "5.0.0",
		Group: "server", Complexity: "O(1)",
	},
	"slowlog": {
		Summary: "A container for commands about the slow log.", Since: "2.2.12",
		Group: "server", Complexity: "Depends on subcommand.",
	},
	"slowlog|get": {
		Summary: "Returns the newest entries of the slow log.", Since: "2.2.12",
		Group: "server", Complexity: "O(N) where N is the number of entries returned",
		Args: []Arg{docOptional(docInteger("count"))},
	},
	"slowlog|len": {
		Summary: "Returns the number of entries in the slow log.", Since: "2.2.12",
		Group: "server", Complexity: "O(1)",
	},
	"slowlog|reset": {
		Summary: "Clears the slow log.", Since: "2.2.12",
		Group: "server", Complexity: "O(N) where N is the number of entries in the slow log",
	},
	"slowlog|help": {
		Summary: "Lists the SLOWLOG subcommands.", Since: "6.2.0",
		Group: "server", Complexity: "O(1)",
	},
	"shutdown": {
		Summary: "Makes the data durable and stops the server.", Since: "1.0.0",
		Group: "server", Complexity: "O(1), plus the time to flush pending writes",
		Args: []Arg{
			docOptional(docOneOf("save-mode", docToken("nosave", "NOSAVE"), docToken("save", "SAVE"))),
			docOptional(docToken("now", "NOW")),
			docOptional(docToken("force", "FORCE")),
			docOptional(docToken("abort", "ABORT")),
		},
	},
	"command": {
		Summary: "Returns details about every command.", Since: "2.8.13",
		Group: "server", Complexity: "O(N) where N is the number of commands",
	},
	"command|count": {
		Summary: "Returns the number of commands.", Since: "2.8.13",
		Group: "server", Complexity: "O(1)",
	},
	"command|info": {
		Summary: "Returns details about the given commands, or about all of them.", Since: "2.8.13",
		Group: "server", Complexity: "O(N) where N is the number of commands looked up",
		Args: []Arg{docOptional(docMultiple(docString("command-name")))},
	},
	"command|docs": {
		Summary: "Returns the documentation of the given commands, or of all of them.", Since: "7.0.0",
		Group: "server", Complexity: "O(N) where N is the number of commands looked up",
		Args: []Arg{docOptional(docMultiple(docString("command-name")))},
	},
	"command|list": {
		Summary: "Returns the names of the commands, optionally filtered.", Since: "7.0.0",
		Group: "server", Complexity: "O(N) where N is the number of commands",
		Args: []Arg{docOptional(docWithToken("FILTERBY", docOneOf("filterby",
			docWithToken("MODULE", docString("module-name")),
			docWithToken("ACLCAT", docString("category")),
			docWithToken("PATTERN", Arg{Name: "pattern", Type: ArgPattern}),
		)))},
	},
	"command|getkeys": {
		Summary: "Extracts the key names from a full command.", Since: "2.8.13",
		Group: "server", Complexity: "O(N) where N is the number of arguments of the command",
		Args: []Arg{docString("command"), docOptional(docMultiple(docString("arg")))},
	},
	"command|getkeysandflags": {
		Summary: "Extracts the key names and their access flags from a full command.", Since: "7.0.0",
		Group: "server", Complexity: "O(N) where N is the number of arguments of the command",
		Args: []Arg{docString("command"), docOptional(docMultiple(docString("arg")))},
	},
	"command|help": {
		Summary: "Lists the COMMAND subcommands.", Since: "5.0.0",
		Group: "server", Complexity: "O(1)",
	},
	"lastsave": {
		Summary: "Returns the Unix time of the last successful save to disk.", Since: "1.0.0",
		Group: "server", Complexity: "O(1)",
	},
	"save": {
		Summary: "Saves the data to disk before replying.", Since: "1.0.0",
		Group: "server", Complexity: "O(N) where N is the number of pending writes",
	},
	"bgsave": {
		Summary: "Saves the data to disk in the background.", Since: "1.0.0",
		Group: "server", Complexity: "O(1)",
		Args: []Arg{docOptional(docToken("schedule", "SCHEDULE"))},
	},

	// transactions
	"multi": {
		Summary: "Starts a transaction.", Since: "1.2.0",
		Group: "transactions", Complexity: "O(1)",
	},
	"exec": {
		Summary: "Runs the commands queued since MULTI.", Since: "1.2.0",
		Group: "transactions", Complexity: "Depends on the queued commands",
	},
	"discard": {
		Summary: "Drops the commands queued since MULTI.", Since: "2.0.0",
		Group: "transactions", Complexity: "O(N) where N is the number of queued commands",
	},
	"watch": {
		Summary: "Watches keys so that the next EXEC fails if any of them changes.", Since: "2.2.0",
		Group: "transactions", Complexity: "O(1) per key",
		Args: []Arg{docMultiple(docKey("key", 0))},
	},
	"unwatch": {
		Summary: "Forgets every watched key.", Since: "2.2.0",
		Group: "transactions", Complexity: "O(1)",
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

func docKey(name string, spec int) Arg { return Arg{Name: name, Type: ArgKey, KeySpec: spec} }

func docString(name string) Arg { return Arg{Name: name, Type: ArgString} }

func docInteger(name string) Arg { return Arg{Name: name, Type: ArgInteger} }

// docToken is a bare keyword argument.
func docToken(name, token string) Arg { return Arg{Name: name, Type: ArgPureToken, Token: token} }

func docOneOf(name string, args ...Arg) Arg { return Arg{Name: name, Type: ArgOneOf, Args: args} }

func docBlock(name string, args ...Arg) Arg { return Arg{Name: name, Type: ArgBlock, Args: args} }

func docOptional(a Arg) Arg { a.Optional = true; return a }

func docMultiple(a Arg) Arg { a.Multiple = true; return a }

func docWithToken(token string, a Arg) Arg { a.Token = token; return a }

// docExpiration is the optional EX|PX|EXAT|PXAT choice of SET and GETEX,
// with last as its final alternative (KEEPTTL or PERSIST).
func docExpiration(last Arg) Arg {
	return docOptional(docOneOf("expiration",
		docWithToken("EX", docInteger("seconds")),
		docWithToken("PX", docInteger("milliseconds")),
		docWithToken("EXAT", Arg{Name: "unix-time-seconds", Type: ArgUnixTime}),
		docWithToken("PXAT", Arg{Name: "unix-time-milliseconds", Type: ArgUnixTime}),
		last,
	))
}

// docExpireCondition is the NX|XX|GT|LT option of the EXPIRE family.
func docExpireCondition() Arg {
	return docOptional(docOneOf("condition",
		docToken("nx", "NX"), docToken("xx", "XX"), docToken("gt", "GT"), docToken("lt", "LT")))
}

func docFlushMode() Arg {
	return docOptional(docOneOf("flush-type", docToken("async", "ASYNC"), docToken("sync", "SYNC")))
}

func docOnOff() Arg {
	return docOneOf("enabled", docToken("on", "ON"), docToken("off", "OFF"))
}
