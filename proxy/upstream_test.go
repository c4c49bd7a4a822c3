package proxy

import (
	"errors"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Slots as Redis Cluster computes them (CLUSTER KEYSLOT on redis-server 7.0).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{
		"":                     0,
		"foo":                  12182,
		"bar":                  5061,
		"a":                    15495,
		"{user1000}.following": 3443,
		"user1000":             3443,
		"{}abc":                KeySlot([]byte("{}abc")), // whole key: no tag
		"abc{}":                KeySlot([]byte("abc{}")),
		"{a":                   KeySlot([]byte("{a")),
		"x{a}y{b}":             15495, // the first tag: a
		"123456789":            12739, // CRC-16/XMODEM check value 0x31C3 = 12739
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	// "{}" is not a hash tag: were it one (empty), both keys would hash
	// the empty string and share a slot.
	if KeySlot([]byte("{}abc")) == KeySlot([]byte("{}xyz")) {
		t.Errorf("{} is taken for a hash tag")
	}
}

func TestParseUpstream(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Upstream
	}{
		{"redis://127.0.0.1:6380", Upstream{Mode: Standalone, Addrs: []string{"127.0.0.1:6380"}}},
		{"redis://localhost", Upstream{Mode: Standalone, Addrs: []string{"localhost:6379"}}},
		{"redis://:p%40ss@h:1", Upstream{Mode: Standalone, Addrs: []string{"h:1"}, Password: "p@ss"}},
		{"redis://alice:pw@h:1/0", Upstream{Mode: Standalone, Addrs: []string{"h:1"}, Username: "alice", Password: "pw"}},
		{"redis://secret@h:1", Upstream{Mode: Standalone, Addrs: []string{"h:1"}, Password: "secret"}},
		{"redis-cluster://a:7000,b:7001, c:7002", Upstream{Mode: Cluster, Addrs: []string{"a:7000", "b:7001", "c:7002"}}},
		{"REDIS-CLUSTER://[::1]:7000", Upstream{Mode: Cluster, Addrs: []string{"[::1]:7000"}}},
		{"redis-sentinel://s1,s2:26380/mymaster?sentinel_password=sp", Upstream{Mode: Sentinel,
			Addrs: []string{"s1:26379", "s2:26380"}, MasterName: "mymaster", SentinelPassword: "sp"}},
	} {
		got, err := ParseUpstream(tc.in)
		if err != nil {
			t.Errorf("ParseUpstream(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseUpstream(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{
		"", "localhost:6379", "http://h:1", "redis://", "redis://h:1,h:2", "redis://h:99999",
		"redis://h:1/3", "redis-sentinel://s:1", "redis://h:1?x=1", "redis://:@:1",
	} {
		if _, err := ParseUpstream(bad); !errors.Is(err, ErrUpstreamURL) {
			t.Errorf("ParseUpstream(%q): %v, want ErrUpstreamURL", bad, err)
		}
	}
	u, _ := ParseUpstream("redis://user:secret@h:1")
	if s := u.String(); s != "redis://h:1" {
		t.Errorf("String() = %q: the password must not show", s)
	}
}

func TestParseRedirect(t *testing.T) {
	for _, tc := range []struct {
		in         string
		kind, addr string
		slot       int
	}{
		{"MOVED 3999 127.0.0.1:6381", "MOVED", "127.0.0.1:6381", 3999},
		{"ASK 0 h:1", "ASK", "h:1", 0},
		{"TRYAGAIN Multiple keys request during rehashing of slot", "TRYAGAIN", "", 0},
		{"MOVED 16384 h:1", "", "", 0},
		{"MOVED x h:1", "", "", 0},
		{"ERR MOVED", "", "", 0},
		{"CROSSSLOT Keys in request don't hash to the same slot", "", "", 0},
	} {
		k, s, a := parseRedirect(tc.in)
		if k != tc.kind || s != tc.slot || a != tc.addr {
			t.Errorf("parseRedirect(%q) = %q %d %q, want %q %d %q", tc.in, k, s, a, tc.kind, tc.slot, tc.addr)
		}
	}
}

func TestUnknownCommandText(t *testing.T) {
	got := unknownCommand([][]byte{[]byte("foo"), []byte("a"), []byte("b")})
	if want := "ERR unknown command 'foo', with args beginning with: 'a' 'b' "; got != want {
		t.Errorf("unknownCommand = %q, want %q", got, want)
	}
}

// The ONCE engine's client never retries by itself (a retried COMPLETE
// would answer -STALE) and speaks RESP2, for every kind of upstream.
func TestUpstreamClient(t *testing.T) {
	for _, addr := range []string{"redis://127.0.0.1:1", "redis-cluster://127.0.0.1:1,127.0.0.1:2", "redis-sentinel://127.0.0.1:1/m"} {
		up, err := ParseUpstream(addr)
		if err != nil {
			t.Fatal(err)
		}
		c := up.Client()
		switch c := c.(type) {
		case *redis.ClusterClient:
			if o := c.Options(); o.MaxRetries > 0 || o.Protocol != 2 {
				t.Errorf("%s: MaxRetries %d, Protocol %d", addr, o.MaxRetries, o.Protocol)
			}
		case *redis.Client:
			if o := c.Options(); o.MaxRetries > 0 || o.Protocol != 2 {
				t.Errorf("%s: MaxRetries %d, Protocol %d", addr, o.MaxRetries, o.Protocol)
			}
		default:
			t.Errorf("%s: client %T", addr, c)
		}
		c.Close()
	}
}
