package onceup

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts that make every state transition atomic in the upstream.
// Each runs on one hash slot: KEYS are the user key (the record, a hash),
// the slot's token counter and the key's outcome record, all in the key's
// slot. Replies are arrays whose first element names the outcome.
//
// ARGV[1] of every script is the database to run in ('' for the one the
// calling connection has selected): a standalone upstream has several, and
// each client of the proxy has its own (SELECT). A SELECT inside a script
// changes the database of that script only, not the connection's.
//
// The record's fields: s (state: r running, d done), t (token), f
// (fingerprint, only when there is one), a (answer, when done), q (the id
// of the request that claimed it, so that a retried claim is recognised).
// The key's expiry is the lease deadline of a running record and the keep
// deadline of a done one, so the upstream frees the key by itself (KV-14).
//
// Tokens are decimal strings inside the scripts: Lua numbers are doubles,
// and concatenating one would print it with 14 digits.

// script is a Lua script run by EVALSHA, or EVAL when the upstream does
// not have it (NOSCRIPT).
type script struct {
	src, hash string
	// noRetry: go-redis must not send it again after a network error
	// (COMPLETE, ABORT, RELEASE: a retry of one that ran answers stale).
	// A ClusterClient retries such errors even with MaxRetries -1.
	noRetry bool
}

func newScript(src string, noRetry bool) *script {
	h := sha1.Sum([]byte(src))
	return &script{src: src, hash: hex.EncodeToString(h[:]), noRetry: noRetry}
}

// processor runs a command: a client, a cluster client or a connection.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// noRetryCmd is a command go-redis does not retry.
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

// run runs the script with keys and args through c.
func (s *script) run(ctx context.Context, c processor, keys []string, args []any) (any, error) {
	do := func(name, body string) *redis.Cmd {
		a := make([]any, 0, 3+len(keys)+len(args))
		a = append(a, name, body, len(keys))
		for _, k := range keys {
			a = append(a, k)
		}
		cmd := redis.NewCmd(ctx, append(a, args...)...)
		if s.noRetry {
			_ = c.Process(ctx, noRetryCmd{cmd})
		} else {
			_ = c.Process(ctx, cmd)
		}
		return cmd
	}
	cmd := do("evalsha", s.hash)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		cmd = do("eval", s.src)
	}
	return cmd.Result()
}

// common is prepended to every script.
const common = `
if ARGV[1] ~= '' then redis.call('SELECT', ARGV[1]) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- next_token draws the slot's next token: never below 1024 times the
-- upstream's clock in ms, so that tokens keep growing even when a failover
-- loses the last increments of the counter.
local function next_token(tk)
  local floor = now_ms() * 1024
  local cur = tonumber(redis.call('GET', tk) or '0')
  if cur < floor then redis.call('SET', tk, string.format('%d', floor)) end
  return string.format('%d', redis.call('INCR', tk))
end
-- kind is 'none', 'once' (a record) or 'other' (any other value).
local function kind(k)
  local t = redis.call('TYPE', k)['ok']
  if t == 'none' then return 'none' end
  if t == 'hash' and redis.call('HEXISTS', k, 's') == 1 then return 'once' end
  return 'other'
end
-- event encodes an announcement: "kind token keylen hasfp fplen key fp payload".
local function event(kind, tok, key, hf, fp, payload)
  return string.format('%s %s %d %s %d ', kind, tok, #key, hf, #fp) .. key .. fp .. payload
end
-- announce publishes an event, or returns it for the caller to publish
-- later (after WAIT) when pub is not '1'.
local function announce(ch, pub, ev)
  if pub == '1' then
    redis.call('SPUBLISH', ch, ev)
    return {'ok'}
  end
  return {'ok', ev}
end
-- outcome_ttl is how long the outcome of the run of record k must be
-- kept for waiters that missed its announcement: they look again at the
-- lease deadline they saw (with no expiry, after the default lease), so
-- the record's remaining lease plus a margin.
local function outcome_ttl(k, margin, deflease)
  local left = redis.call('PTTL', k)
  if left < 0 then left = tonumber(deflease) end
  return left + tonumber(margin)
end
-- outcome keeps how a run ended for ttl ms, for waiters that missed the event.
local function outcome(ek, tok, o, p, ttl)
  redis.call('DEL', ek)
  redis.call('HSET', ek, 't', tok, 'o', o, 'p', p)
  redis.call('PEXPIRE', ek, ttl)
end
-- ended returns the outcome of run tok if the outcome record has it.
local function ended(ek, tok)
  if tok == '' then return nil end
  local o = redis.call('HMGET', ek, 't', 'o', 'p')
  if o[1] ~= tok then return nil end
  if o[2] == 'done' then return {'done', o[3], '0', ''} end
  return {'failed', o[3]}
end
`

// claimScript claims a free key, or reports the key's state.
//
// ARGV: db, mode, lease, hasfp, fp, rechasfp, recfp, awaited, reqid.
//
//   - mode 'c' (CLAIM): claims a free key with the caller's fingerprint;
//     a fingerprint that differs from the record's is a mismatch.
//   - mode 't' (takeover, for a local claim waiter): as 'c', but the
//     outcome record is looked up first when the key no longer holds the
//     run it waited for (token awaited: it may have ended), and the claim
//     keeps the fingerprint the waiter last saw on the record (rechasfp,
//     recfp), if any. Fingerprints are compared by the caller, per waiter.
//   - mode 'w' (ONCE.WAIT): never claims; a free key is 'free' (or the
//     awaited run's outcome).
//
// Replies: {'claimed', token} · {'done', answer, hasfp, fp} ·
// {'running', pttl, token, hasfp, fp} · {'failed', message} ·
// {'free'} · {'mismatch'} · {'wrongtype'}.
var claimScript = newScript(common+`
local k, tk, ek = KEYS[1], KEYS[2], KEYS[3]
local mode, lease, hasfp, fp = ARGV[2], ARGV[3], ARGV[4] == '1', ARGV[5]
local awaited, reqid = ARGV[8], ARGV[9]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'once' then
  local r = redis.call('HMGET', k, 's', 't', 'f', 'a', 'q')
  local s, t, f, a, q = r[1], r[2], r[3], r[4], r[5]
  if s == 'r' and q and reqid ~= '' and q == reqid then return {'claimed', t} end
  if mode == 'c' and hasfp and f and f ~= fp then return {'mismatch'} end
  if mode ~= 'c' and t ~= awaited then
    local o = ended(ek, awaited)
    if o then return o end
  end
  local hf = '1'
  if not f then hf, f = '0', '' end
  if s == 'd' then return {'done', a or '', hf, f} end
  return {'running', redis.call('PTTL', k), t, hf, f}
end
if mode ~= 'c' then
  local o = ended(ek, awaited)
  if o then return o end
end
if mode == 'w' then return {'free'} end
if mode == 't' and ARGV[6] == '1' then hasfp, fp = true, ARGV[7] end
local tok = next_token(tk)
if hasfp then
  redis.call('HSET', k, 's', 'r', 't', tok, 'f', fp, 'q', reqid)
else
  redis.call('HSET', k, 's', 'r', 't', tok, 'q', reqid)
end
redis.call('PEXPIRE', k, lease)
return {'claimed', tok}
`, false)

// completeScript stores the answer of the run token holds and announces
// it. Once the run is completed the token no longer holds the claim: a
// repeated COMPLETE is stale, as in the embedded engine (the engine's
// client makes no automatic retries, so a lost reply is not retried into
// -STALE behind the caller's back).
//
// When the answer is kept for less than the run's remaining lease plus
// margin (KEEP 0, a short KEEP), the outcome is also kept that long in the
// outcome record, so that a waiter that missed the announcement, and looks
// again only at the lease deadline it saw, still gets the answer instead
// of claiming a key whose run it waited for.
//
// ARGV: db, token, answer, keep (-1: until deleted), pub, margin, default
// lease, channel. Replies: {'ok'} or {'ok', event} · {'stale'} ·
// {'wrongtype'}.
var completeScript = newScript(common+`
local k, ek = KEYS[1], KEYS[3]
local tok, ans, keep, pub, ch = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[8]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'none' then return {'stale'} end
local r = redis.call('HMGET', k, 's', 't', 'f')
if r[1] ~= 'r' or r[2] ~= tok then return {'stale'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
local ottl = outcome_ttl(k, ARGV[6], ARGV[7])
if keep == 0 then
  redis.call('DEL', k)
else
  redis.call('HSET', k, 's', 'd', 'a', ans)
  redis.call('HDEL', k, 'q')
  if keep > 0 then redis.call('PEXPIRE', k, keep) else redis.call('PERSIST', k) end
end
if keep >= 0 and keep < ottl then outcome(ek, tok, 'done', ans, ottl) end
return announce(ch, pub, event('d', tok, k, hf, f, ans))
`, true)

// abortScript frees the key of the run token holds, keeps the failure in
// the outcome record for the run's remaining lease plus margin (for
// waiters that missed the announcement) and announces it (KV-12). A
// repeated ABORT is stale.
//
// ARGV: db, token, message, pub, margin, default lease, channel.
// Replies: {'ok'} or {'ok', event} · {'stale'} · {'wrongtype'}.
var abortScript = newScript(common+`
local k, ek = KEYS[1], KEYS[3]
local tok, msg, pub, ch = ARGV[2], ARGV[3], ARGV[4], ARGV[7]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'none' then return {'stale'} end
local r = redis.call('HMGET', k, 's', 't', 'f')
if r[1] ~= 'r' or r[2] ~= tok then return {'stale'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
local ottl = outcome_ttl(k, ARGV[5], ARGV[6])
redis.call('DEL', k)
outcome(ek, tok, 'failed', msg, ottl)
return announce(ch, pub, event('f', tok, k, hf, f, msg))
`, true)

// extendScript moves the lease deadline of the run token holds.
// ARGV: db, token, lease. Replies: {'ok'} · {'stale'} · {'wrongtype'}.
var extendScript = newScript(common+`
local k = KEYS[1]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'none' then return {'stale'} end
local r = redis.call('HMGET', k, 's', 't')
if r[1] ~= 'r' or r[2] ~= ARGV[2] then return {'stale'} end
redis.call('PEXPIRE', k, ARGV[3])
return {'ok'}
`, false)

// releaseScript gives up a claim no one will run (it was handed to a
// caller that has gone), as a lapse: the key becomes free and every
// instance's waiters are told to look again.
// ARGV: db, token, channel. Replies: {'ok'} · {'stale'}.
var releaseScript = newScript(common+`
local k = KEYS[1]
if kind(k) ~= 'once' then return {'stale'} end
local r = redis.call('HMGET', k, 's', 't', 'f')
if r[1] ~= 'r' or r[2] ~= ARGV[2] then return {'stale'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
redis.call('DEL', k)
redis.call('SPUBLISH', ARGV[3], event('l', ARGV[2], k, hf, f, ''))
return {'ok'}
`, true)

// peekScript reads one key, for a check while the key's slot moves (when
// the scripts over the three keys are answered TRYAGAIN): mode 'r', the
// record at KEYS[1] if it holds a kept answer; mode 'o', the outcome
// record at KEYS[1] if it holds how run ARGV[3] ended.
// ARGV: db, mode, token. Replies: {'done', answer, hasfp, fp} ·
// {'failed', message} · {'none'}.
var peekScript = newScript(common+`
local k = KEYS[1]
if ARGV[2] == 'o' then return ended(k, ARGV[3]) or {'none'} end
if kind(k) ~= 'once' then return {'none'} end
local r = redis.call('HMGET', k, 's', 'a', 'f')
if r[1] ~= 'd' then return {'none'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
return {'done', r[2] or '', hf, f}
`, false)

// statusScript reads a record for ONCE.STATUS.
// ARGV: db. Replies: {'free'} · {'wrongtype'} · {state, token, hasfp, fp, pttl}.
var statusScript = newScript(common+`
local k = KEYS[1]
local kd = kind(k)
if kd == 'none' then return {'free'} end
if kd == 'other' then return {'wrongtype'} end
local r = redis.call('HMGET', k, 's', 't', 'f')
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
local s = 'running'
if r[1] == 'd' then s = 'done' end
return {s, r[2], hf, f, redis.call('PTTL', k)}
`, false)
