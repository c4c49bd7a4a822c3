package proxy

import "errors"

// Errors of the proxy. The replies a client sees are worded where they are
// written (cluster.go and tx.go keep Redis Cluster's and Redis's texts).
var (
	// ErrUpstreamURL is wrapped by the errors of ParseUpstream.
	ErrUpstreamURL = errors.New("bad upstream address")
	// ErrUpstreamProtocol is a reply from the upstream that is not RESP.
	ErrUpstreamProtocol = errors.New("upstream protocol error")
	// ErrHandshake is a refused HELLO or AUTH on a new upstream
	// connection (a wrong upstream password, or HELLO 3 on a server
	// older than Redis 6).
	ErrHandshake = errors.New("upstream handshake refused")
	// ErrNoMaster means no master serves a slot (the cluster is down or
	// being resharded) or the sentinels name no master.
	ErrNoMaster = errors.New("no upstream master known")
	// ErrClosed is returned once the proxy is closed.
	ErrClosed = errors.New("proxy closed")
	// ErrTopology is a CLUSTER SLOTS or sentinel reply that could not be
	// understood.
	ErrTopology = errors.New("cannot read the upstream's topology")
	// ErrClientGone marks an upstream connection closed because its
	// client left while a blocking command waited on it.
	ErrClientGone = errors.New("the client left while its command waited")
)
