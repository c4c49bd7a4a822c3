package proxy

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Mode is the kind of upstream the proxy forwards to.
type Mode int

// The upstream modes.
const (
	// Standalone is one redis-server (or Valkey, or anything that speaks
	// Redis's protocol as one server).
	Standalone Mode = iota
	// Cluster is a Redis Cluster: commands go to the master that owns
	// their keys' slot.
	Cluster
	// Sentinel is a master watched by Redis Sentinel: commands go to the
	// master the sentinels name, which changes on failover.
	Sentinel
)

func (m Mode) String() string {
	switch m {
	case Cluster:
		return "cluster"
	case Sentinel:
		return "sentinel"
	}
	return "standalone"
}

// Upstream is a parsed --upstream address.
type Upstream struct {
	Mode Mode
	// Addrs are host:port pairs: the server, the cluster's seed nodes,
	// or the sentinels.
	Addrs []string
	// Username and Password authenticate the proxy's connections to the
	// data nodes (AUTH / HELLO AUTH); Username "" means the default user.
	Username, Password string
	// MasterName is the name the sentinels know the master by.
	MasterName string
	// SentinelPassword authenticates to the sentinels themselves.
	SentinelPassword string
}

// Schemes accepted by ParseUpstream.
const (
	schemeStandalone = "redis"
	schemeCluster    = "redis-cluster"
	schemeSentinel   = "redis-sentinel"
)

// ParseUpstream reads an upstream address:
//
//	redis://[[user]:password@]host[:port]                 one server
//	redis-cluster://[[user]:password@]h1:p1,h2:p2,…       a Redis Cluster (seed nodes)
//	redis-sentinel://[[user]:password@]s1:p1,s2:p2/master[?sentinel_password=…]
//
// The port defaults to 6379 (26379 for sentinels). The credentials are
// URL-encoded, as in go-redis' URLs. A database number in the path is
// refused: clients choose their database with SELECT, as with one server.
func ParseUpstream(s string) (Upstream, error) {
	var u Upstream
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return u, fmt.Errorf("%w %q: expected redis://, redis-cluster:// or redis-sentinel://", ErrUpstreamURL, s)
	}
	defPort := "6379"
	switch strings.ToLower(scheme) {
	case schemeStandalone:
		u.Mode = Standalone
	case schemeCluster:
		u.Mode = Cluster
	case schemeSentinel:
		u.Mode = Sentinel
		defPort = "26379"
	default:
		return u, fmt.Errorf("%w %q: unknown scheme %q (redis, redis-cluster or redis-sentinel)", ErrUpstreamURL, s, scheme)
	}
	rest, query, _ := strings.Cut(rest, "?")
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		info := rest[:at]
		rest = rest[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		var err error
		if u.Username, err = url.PathUnescape(user); err != nil {
			return u, fmt.Errorf("%w %q: user name: %v", ErrUpstreamURL, s, err)
		}
		if !hasPass {
			// "redis://secret@host", as redis-cli -u reads it: a password.
			u.Password, u.Username = u.Username, ""
		} else if u.Password, err = url.PathUnescape(pass); err != nil {
			return u, fmt.Errorf("%w %q: password: %v", ErrUpstreamURL, s, err)
		}
	}
	hosts, path, _ := strings.Cut(rest, "/")
	switch {
	case u.Mode == Sentinel:
		if path == "" {
			return u, fmt.Errorf("%w %q: the master's name must follow the sentinels: redis-sentinel://host:port/mymaster", ErrUpstreamURL, s)
		}
		u.MasterName = path
	case path != "" && path != "0":
		return u, fmt.Errorf("%w %q: a database number in the address is not supported (clients SELECT theirs)", ErrUpstreamURL, s)
	}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return u, fmt.Errorf("%w %q: %v", ErrUpstreamURL, s, err)
		}
		for k := range q {
			if k != "sentinel_password" || u.Mode != Sentinel {
				return u, fmt.Errorf("%w %q: unknown option %q", ErrUpstreamURL, s, k)
			}
		}
		u.SentinelPassword = q.Get("sentinel_password")
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), defPort
		}
		if host == "" {
			return u, fmt.Errorf("%w %q: empty host in %q", ErrUpstreamURL, s, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return u, fmt.Errorf("%w %q: bad port in %q", ErrUpstreamURL, s, h)
		}
		u.Addrs = append(u.Addrs, net.JoinHostPort(host, port))
	}
	switch {
	case len(u.Addrs) == 0:
		return u, fmt.Errorf("%w %q: no host", ErrUpstreamURL, s)
	case u.Mode == Standalone && len(u.Addrs) > 1:
		return u, fmt.Errorf("%w %q: several hosts: use redis-cluster:// for a cluster or redis-sentinel:// for sentinels", ErrUpstreamURL, s)
	}
	return u, nil
}

// String is the address without the password.
func (u Upstream) String() string {
	scheme := map[Mode]string{Standalone: schemeStandalone, Cluster: schemeCluster, Sentinel: schemeSentinel}[u.Mode]
	s := scheme + "://" + strings.Join(u.Addrs, ",")
	if u.Mode == Sentinel {
		s += "/" + u.MasterName
	}
	return s
}
