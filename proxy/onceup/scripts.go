package onceup

import "github.com/redis/go-redis/v9"

// The Lua scripts that make every state transition atomic in the upstream.
// Each runs on one hash slot: KEYS are the user key (the record, a hash),
// the slot's token counter and the key's outcome record, all in the key's
// slot. Replies are arrays whose first element names the outcome.
//
// The record's fields: s (state: r running, d done), t (token), f
// (fingerprint, only when there is one), a (answer, when done), q (the id
// of the request that claimed it, so that a retried claim is recognised).
// The key's expiry is the lease deadline of a running record and the keep
// deadline of a done one, so the upstream frees the key by itself (KV-14).
//
// Tokens are decimal strings inside the scripts: Lua numbers are doubles,
// and concatenating one would print it with 14 digits.

// common is prepended to every script.
const common = `
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
-- outcome keeps how a run ended for ttl ms, for waiters that missed the event.
local function outcome(ek, tok, o, p, ttl)
  if tonumber(ttl) > 0 then
    redis.call('DEL', ek)
    redis.call('HSET', ek, 't', tok, 'o', o, 'p', p)
    redis.call('PEXPIRE', ek, ttl)
  end
end
`

// claimScript claims a free key, or reports the key's state.
//
// ARGV: mode, lease, hasfp, fp, rechasfp, recfp, awaited, reqid.
//
//   - mode 'c' (CLAIM): claims a free key with the caller's fingerprint;
//     a fingerprint that differs from the record's is a mismatch.
//   - mode 't' (takeover, for a local claim waiter): as 'c', but a free key
//     is first looked up in the outcome record (the run it waited for,
//     token awaited, may have ended), and the claim keeps the fingerprint
//     the waiter last saw on the record (rechasfp, recfp), if any.
//     Fingerprints are compared by the caller, per waiter.
//   - mode 'w' (ONCE.WAIT): never claims; a free key is 'free' (or the
//     awaited run's outcome).
//
// Replies: {'claimed', token} · {'done', answer, hasfp, fp} ·
// {'running', pttl, token, hasfp, fp} · {'failed', message} ·
// {'free'} · {'mismatch'} · {'wrongtype'}.
var claimScript = redis.NewScript(common + `
local k, tk, ek = KEYS[1], KEYS[2], KEYS[3]
local mode, lease, hasfp, fp = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'once' then
  local r = redis.call('HMGET', k, 's', 't', 'f', 'a', 'q')
  local s, t, f, a, q = r[1], r[2], r[3], r[4], r[5]
  if s == 'r' and q and ARGV[8] ~= '' and q == ARGV[8] then return {'claimed', t} end
  if mode == 'c' and hasfp and f and f ~= fp then return {'mismatch'} end
  local hf = '1'
  if not f then hf, f = '0', '' end
  if s == 'd' then return {'done', a or '', hf, f} end
  return {'running', redis.call('PTTL', k), t, hf, f}
end
if mode ~= 'c' and ARGV[7] ~= '' then
  local o = redis.call('HMGET', ek, 't', 'o', 'p')
  if o[1] == ARGV[7] then
    if o[2] == 'done' then return {'done', o[3], '0', ''} end
    return {'failed', o[3]}
  end
end
if mode == 'w' then return {'free'} end
if mode == 't' and ARGV[5] == '1' then hasfp, fp = true, ARGV[6] end
local tok = next_token(tk)
if hasfp then
  redis.call('HSET', k, 's', 'r', 't', tok, 'f', fp, 'q', ARGV[8])
else
  redis.call('HSET', k, 's', 'r', 't', tok, 'q', ARGV[8])
end
redis.call('PEXPIRE', k, lease)
return {'claimed', tok}
`)

// completeScript stores the answer of the run token holds and announces
// it. A retry of a COMPLETE that already stored this very answer under
// this token answers ok again.
//
// ARGV: token, answer, keep (-1: until deleted), pub, outcome ttl, channel.
// Replies: {'ok'} or {'ok', event} · {'stale'} · {'wrongtype'}.
var completeScript = redis.NewScript(common + `
local k, ek = KEYS[1], KEYS[3]
local tok, ans, keep, pub, ttl, ch = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'none' then
  local o = redis.call('HMGET', ek, 't', 'o', 'p')
  if o[1] == tok and o[2] == 'done' and o[3] == ans then return {'ok'} end
  return {'stale'}
end
local r = redis.call('HMGET', k, 's', 't', 'f', 'a')
if r[1] == 'd' and r[2] == tok and r[4] == ans then return {'ok'} end
if r[1] ~= 'r' or r[2] ~= tok then return {'stale'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
if keep == 0 then
  redis.call('DEL', k)
else
  redis.call('HSET', k, 's', 'd', 'a', ans)
  redis.call('HDEL', k, 'q')
  if keep > 0 then redis.call('PEXPIRE', k, keep) else redis.call('PERSIST', k) end
end
if keep >= 0 and keep < tonumber(ttl) then outcome(ek, tok, 'done', ans, ttl) end
return announce(ch, pub, event('d', tok, k, hf, f, ans))
`)

// abortScript frees the key of the run token holds and announces the
// failure (KV-12). A retry of the same ABORT answers ok again.
//
// ARGV: token, message, pub, outcome ttl, channel.
// Replies: {'ok'} or {'ok', event} · {'stale'} · {'wrongtype'}.
var abortScript = redis.NewScript(common + `
local k, ek = KEYS[1], KEYS[3]
local tok, msg, pub, ttl, ch = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'none' then
  local o = redis.call('HMGET', ek, 't', 'o', 'p')
  if o[1] == tok and o[2] == 'failed' and o[3] == msg then return {'ok'} end
  return {'stale'}
end
local r = redis.call('HMGET', k, 's', 't', 'f')
if r[1] ~= 'r' or r[2] ~= tok then return {'stale'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
redis.call('DEL', k)
outcome(ek, tok, 'failed', msg, ttl)
return announce(ch, pub, event('f', tok, k, hf, f, msg))
`)

// extendScript moves the lease deadline of the run token holds.
// ARGV: token, lease. Replies: {'ok'} · {'stale'} · {'wrongtype'}.
var extendScript = redis.NewScript(common + `
local k = KEYS[1]
local kd = kind(k)
if kd == 'other' then return {'wrongtype'} end
if kd == 'none' then return {'stale'} end
local r = redis.call('HMGET', k, 's', 't')
if r[1] ~= 'r' or r[2] ~= ARGV[1] then return {'stale'} end
redis.call('PEXPIRE', k, ARGV[2])
return {'ok'}
`)

// releaseScript gives up a claim no one will run (it was handed to a
// caller that has gone), as a lapse: the key becomes free and every
// instance's waiters are told to look again.
// ARGV: token, channel. Replies: {'ok'} · {'stale'}.
var releaseScript = redis.NewScript(common + `
local k = KEYS[1]
if kind(k) ~= 'once' then return {'stale'} end
local r = redis.call('HMGET', k, 's', 't', 'f')
if r[1] ~= 'r' or r[2] ~= ARGV[1] then return {'stale'} end
local hf, f = '1', r[3]
if not f then hf, f = '0', '' end
redis.call('DEL', k)
redis.call('SPUBLISH', ARGV[2], event('l', ARGV[1], k, hf, f, ''))
return {'ok'}
`)

// statusScript reads a record for ONCE.STATUS.
// Replies: {'free'} · {'wrongtype'} · {state, token, hasfp, fp, pttl}.
var statusScript = redis.NewScript(common + `
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
`)
