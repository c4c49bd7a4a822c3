// Helpers the client scripts share: the server under test (from the
// environment integration/matrix_test.go sets), reply-shape checks for the
// ONCE commands, and small async utilities. Nothing here talks to a server.

import assert from 'node:assert/strict';

// server returns the oncekv server to test: ONCEKV_HOST, ONCEKV_PORT,
// ONCEKV_PASSWORD and ONCEKV_DB, set by `go test ./integration -run Matrix`.
export function server() {
  const need = ['ONCEKV_HOST', 'ONCEKV_PORT', 'ONCEKV_PASSWORD', 'ONCEKV_DB'];
  const missing = need.filter((k) => !process.env[k]);
  if (missing.length > 0) {
    throw new Error(`${missing.join(', ')} not set: these tests run from the Go driver, ` +
      '`go test ./integration -run Matrix` (it starts the server and sets them)');
  }
  return {
    host: process.env.ONCEKV_HOST,
    port: Number(process.env.ONCEKV_PORT),
    password: process.env.ONCEKV_PASSWORD,
    db: Number(process.env.ONCEKV_DB),
  };
}

// onceReply checks a [state, detail] reply of ONCE.CLAIM or ONCE.WAIT and
// returns it as {state, detail}: the detail of claimed and running is an
// integer reply (a JS number), the others a bulk string.
export function onceReply(reply, what) {
  assert.ok(Array.isArray(reply) && reply.length === 2,
    `${what}: reply ${inspect(reply)} is not a two-element array`);
  const [state, detail] = reply;
  switch (state) {
    case 'claimed':
    case 'running':
      assert.equal(typeof detail, 'number', `${what}: [${state} …] detail ${inspect(detail)} is not an integer reply`);
      assert.ok(Number.isInteger(detail), `${what}: detail ${detail} is not an integer`);
      break;
    case 'done':
    case 'failed':
    case 'free':
      assert.equal(typeof detail, 'string', `${what}: [${state} …] detail ${inspect(detail)} is not a bulk string`);
      break;
    default:
      assert.fail(`${what}: unknown state ${inspect(state)} in ${inspect(reply)}`);
  }
  return { state, detail };
}

// statusFields are ONCE.STATUS's fields, in the order RESP2 sends them.
export const statusFields = ['state', 'token', 'lease-ms', 'keep-ms', 'waiters', 'fingerprint'];

// onceStatus checks a ONCE.STATUS reply of a running or done key and returns
// its fields as a plain object. shape is what the client makes of the reply:
// 'array' a flat field/value array, in order (RESP2, or a RESP3 map that the
// client flattens), 'object' a plain object, 'map' a JS Map.
export function onceStatus(reply, shape, what) {
  let fields;
  switch (shape) {
    case 'array': {
      assert.ok(Array.isArray(reply), `${what}: reply ${inspect(reply)} is not an array`);
      assert.equal(reply.length, 12, `${what}: ${reply.length} elements, want 12 (six field/value pairs): ${inspect(reply)}`);
      fields = {};
      for (let i = 0; i < reply.length; i += 2) {
        assert.equal(reply[i], statusFields[i / 2], `${what}: element ${i} of ${inspect(reply)}`);
        fields[reply[i]] = reply[i + 1];
      }
      break;
    }
    case 'object':
      assert.ok(reply !== null && typeof reply === 'object' && !Array.isArray(reply) && !(reply instanceof Map),
        `${what}: reply ${inspect(reply)} is not a plain object (a RESP3 map)`);
      fields = { ...reply };
      break;
    case 'map':
      assert.ok(reply instanceof Map, `${what}: reply ${inspect(reply)} is not a Map (a RESP3 map)`);
      fields = Object.fromEntries(reply);
      break;
    default:
      throw new Error(`onceStatus: unknown shape ${shape}`);
  }
  assert.deepEqual(Object.keys(fields).sort(), [...statusFields].sort(), `${what}: fields of ${inspect(reply)}`);
  assert.ok(fields.state === 'running' || fields.state === 'done', `${what}: state ${inspect(fields.state)}`);
  for (const f of ['token', 'lease-ms', 'keep-ms', 'waiters']) {
    assert.ok(Number.isInteger(fields[f]), `${what}: ${f} ${inspect(fields[f])} is not an integer reply`);
  }
  assert.ok(fields.fingerprint === null || typeof fields.fingerprint === 'string',
    `${what}: fingerprint ${inspect(fields.fingerprint)} is neither a string nor null`);
  return fields;
}

// track follows a promise so that a test can check it has not settled yet.
export function track(promise) {
  const t = { settled: false, value: undefined, error: undefined };
  t.promise = promise.then(
    (v) => { t.settled = true; t.value = v; return v; },
    (e) => { t.settled = true; t.error = e; throw e; },
  );
  // Rejections are reported by whoever awaits t.promise.
  t.promise.catch(() => {});
  return t;
}

// within resolves with promise's value, or rejects if it takes longer than ms.
export async function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no reply within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// eventually polls check (async, returning [done, state]) every 5 ms until
// it is done, failing after ms with the last state.
export async function eventually(ms, what, check) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    const [done, state] = await check();
    if (done) return;
    last = state;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms; last: ${inspect(last)}`);
    await sleep(5);
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// scanKeys returns the n key names the SCAN step inserts, in byte order.
export function scanKeys(prefix, n) {
  return Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);
}

// scrambled returns the indexes 0..n-1 in a fixed scrambled order, so that
// SCAN's order cannot match the insertion order by accident.
export function scrambled(n) {
  return Array.from({ length: n }, (_, i) => (i * 7919) % n);
}

// checkScanned checks that got holds each of want exactly once and nothing
// else. oncekv returns keys in byte order (KV-7): that is checked too.
export function checkScanned(got, want, what) {
  const counts = new Map();
  for (const k of got) counts.set(k, (counts.get(k) ?? 0) + 1);
  const dups = [...counts].filter(([, n]) => n > 1).map(([k]) => k);
  const wantSet = new Set(want);
  const extra = [...counts.keys()].filter((k) => !wantSet.has(k));
  const missing = want.filter((k) => !counts.has(k));
  assert.ok(dups.length + extra.length + missing.length === 0,
    `${what}: ${got.length} keys, want ${want.length} each once; duplicates ${few(dups)}, unexpected ${few(extra)}, missing ${few(missing)}`);
  const sorted = [...got].sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
  assert.deepEqual(got, sorted, `${what}: keys not in byte order (KV-7)`);
}

function few(a) {
  return a.length > 10 ? `${inspect(a.slice(0, 10))}…(${a.length - 10} more)` : inspect(a);
}

export function inspect(v) {
  try {
    return JSON.stringify(v, (_, x) => (x instanceof Map ? { Map: [...x] } : x));
  } catch {
    return String(v);
  }
}

// errorMessage is the text of a rejection, for matching Redis error prefixes.
export function errorMessage(e) {
  return e instanceof Error ? e.message : String(e);
}
