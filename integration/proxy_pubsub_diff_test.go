package integration

import "testing"

// proxyPubsubSkips are the Pub/Sub scripts whose commands the proxy
// answers itself or refuses, with the reason.
var proxyPubsubSkips = map[string]string{
	"multi": "SUBSCRIBE cannot be queued in MULTI through the proxy",
	"pause": "CLIENT PAUSE is refused by the proxy",
}

// TestProxyDiffPubsub runs the Pub/Sub scripts through a proxy over one
// redis-server and compares them with a redis-server byte for byte:
// subscriptions get an upstream connection of their own, whose messages
// reach the subscriber as they are published (the scripts read them
// after the PUBLISH from another connection), in order with the replies,
// in RESP2 and RESP3, as Redis 7 does (the contract is silent on Pub/Sub).
func TestProxyDiffPubsub(t *testing.T) {
	t.Parallel()
	p := newProxyPair(t)
	var scripts []Script
	for _, s := range pubsubScripts() {
		if _, skip := proxyPubsubSkips[s.Name]; !skip {
			scripts = append(scripts, s)
		}
	}
	p.RunScripts(t, scripts)
}
