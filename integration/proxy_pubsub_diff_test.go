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
	// Pipelined: the replies keep their order across the subscribed
	// connection and the commands after the last unsubscribe, which run
	// in the database the client chose meanwhile. (UNSUBSCRIBE names its
	// channels: without, their order is each server's hash table's.)
	t.Run("pipelined", func(t *testing.T) {
		for _, ex := range []exchange{
			{name: "unsubscribe-then-commands", chunks: []string{"SUBSCRIBE pa pb\r\nPING\r\nGET pp:k\r\nUNSUBSCRIBE pa pb\r\nSELECT 3\r\nSET pp:k v3\r\nGET pp:k\r\nSELECT 0\r\nGET pp:k\r\nDEL pp:k\r\n"}},
			{name: "resubscribe", chunks: []string{"SUBSCRIBE pa\r\nUNSUBSCRIBE pa\r\nPSUBSCRIBE p*\r\nGET pp:k\r\nPUNSUBSCRIBE\r\nECHO x\r\n"}},
			{name: "quit", chunks: []string{"SUBSCRIBE pa\r\nPING x\r\nQUIT\r\nPING\r\n"}},
			{name: "reset", chunks: []string{"SELECT 2\r\nSUBSCRIBE pa\r\nRESET\r\nSET pp:r 1\r\nSELECT 2\r\nEXISTS pp:r\r\nSELECT 0\r\nDEL pp:r\r\n"}},
		} {
			t.Run(ex.name, func(t *testing.T) { compareExchange(t, p.Redis, p.Other, ex) })
		}
	})
}
