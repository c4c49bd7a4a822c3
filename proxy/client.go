package proxy

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// Client returns a go-redis client for the upstream, for the parts of the
// proxy that speak to it through go-redis (the ONCE engine, onceup): a
// Client, a ClusterClient or a failover Client. The caller closes it.
//
// The client never retries a command by itself (MaxRetries -1): a retry
// of a ONCE.COMPLETE whose reply was lost would answer -STALE for a
// completion that succeeded. (MOVED and ASK are still followed: the
// command did not run. A ClusterClient also retries network errors up to
// MaxRedirects times whatever MaxRetries says: onceup marks COMPLETE and
// ABORT as not retryable itself.) It speaks RESP2: onceup takes sticky
// connections (Client.Conn), which race with go-redis's RESP3
// maintenance-notification handshake.
//
// The cluster client re-reads the slot map every second: go-redis
// otherwise re-reads it only on MOVED/ASK or every minute, and after a
// failover it would keep dialing the dead master.
func (u Upstream) Client() redis.UniversalClient {
	switch u.Mode {
	case Cluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: u.Addrs, Username: u.Username, Password: u.Password,
			ClientName:                 "oncekv-proxy-once",
			ClusterStateReloadInterval: time.Second,
			Protocol:                   2,
			MaxRetries:                 -1,
		})
	case Sentinel:
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: u.MasterName, SentinelAddrs: u.Addrs, SentinelPassword: u.SentinelPassword,
			Username: u.Username, Password: u.Password, ClientName: "oncekv-proxy-once", Protocol: 2,
			MaxRetries: -1,
		})
	}
	return redis.NewClient(&redis.Options{
		Addr: u.Addrs[0], Username: u.Username, Password: u.Password,
		ClientName: "oncekv-proxy-once", Protocol: 2, MaxRetries: -1,
	})
}
