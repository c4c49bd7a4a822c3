// run: one runner for any number of callers, keep, failure, leases.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ReplyError } from 'ioredis'
import { LeaseLostError, RunFailedError } from '../src/index.js'
import { eventually, gate, held, redis, settle, sleep, store, uniq, untilAborted, waiters } from './helpers.js'

test('fifty concurrent callers in one process: fn runs once, all get its value', async () => {
  const o = store().once<{ n: number; at: string }>(uniq('fifty'))
  let calls = 0
  const infos = await Promise.all(
    Array.from({ length: 50 }, () =>
      o.runInfo('k', async () => {
        calls++
        await sleep(100)
        return { n: 7, at: 'runner' }
      }),
    ),
  )
  assert.equal(calls, 1)
  const runners = infos.filter((i) => !i.replayed)
  assert.equal(runners.length, 1, 'exactly one caller ran fn')
  for (const i of infos) {
    assert.deepEqual(i.value, { n: 7, at: 'runner' })
    assert.equal(i.token, runners[0].token, 'callers sharing an in-process run get its token')
  }
  assert.ok(runners[0].token > 0)
  // Each caller decodes its own copy.
  assert.notEqual(infos[0].value, infos[1].value)
  // Later callers get the kept answer from the server, without a token.
  const again = await o.runInfo('k', () => assert.fail('fn ran for a kept answer'))
  assert.deepEqual(again, { value: { n: 7, at: 'runner' }, replayed: true, token: 0 })
})

test('fifty concurrent callers across three stores (processes): fn runs once', async () => {
  const name = uniq('across')
  const onces = [store().once<number>(name), store().once<number>(name), store().once<number>(name)]
  let calls = 0
  const infos = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      onces[i % 3].runInfo('k', async () => {
        calls++
        await sleep(150)
        return 1234
      }),
    ),
  )
  assert.equal(calls, 1)
  assert.equal(infos.filter((i) => !i.replayed).length, 1)
  assert.ok(infos.every((i) => i.value === 1234))
})

test('keep: the answer is replayed while kept, and the key runs again after it', async () => {
  const admin = redis()
  const name = uniq('keep')
  const o = store().once<number>(name, { keep: '300ms' })
  let calls = 0
  const fn = () => ++calls
  const first = await o.runInfo('k', fn)
  assert.deepEqual([first.value, first.replayed], [1, false])
  const second = await o.runInfo('k', fn)
  assert.deepEqual([second.value, second.replayed], [1, true])
  assert.equal(calls, 1)
  const pttl = await admin.pttl(`${name}:k`)
  assert.ok(pttl > 0 && pttl <= 300, `PTTL ${pttl} within the keep`)
  await sleep(400)
  const info = await o.runInfo('k', fn)
  assert.equal(info.replayed, false)
  assert.equal(info.value, 2)
  assert.equal(calls, 2)
})

test('without keep the answer is kept until the key is deleted', async () => {
  const admin = redis()
  const name = uniq('forever')
  const o = store().once<string>(name)
  assert.equal(await o.run('k', () => 'first'), 'first')
  assert.equal(await admin.pttl(`${name}:k`), -1)
  assert.equal(await admin.type(`${name}:k`), 'once')
  assert.equal(await o.run('k', () => 'second'), 'first')
  await admin.del(`${name}:k`)
  assert.equal(await o.run('k', () => 'third'), 'third')
})

test('keep 0: callers waiting at that moment share the run, a later call runs again', async () => {
  const name = uniq('keep0')
  const a = store().once<number>(name, { keep: 0 })
  const b = store().once<number>(name, { keep: 0 })
  let calls = 0
  const started = gate()
  const runner = a.runInfo('k', async () => {
    started.open()
    await sleep(300)
    return ++calls
  })
  await started.promise
  const waiter = b.runInfo('k', () => ++calls)
  const [r, w] = await Promise.all([runner, waiter])
  assert.equal(r.replayed, false)
  assert.deepEqual([w.value, w.replayed], [1, true])
  const later = await b.runInfo('k', () => ++calls)
  assert.deepEqual([later.value, later.replayed], [2, false])
})

test('fn throws: the runner rethrows, waiters get RunFailedError, the next run runs again', async () => {
  const name = uniq('fail')
  const a = store().once<string>(name)
  const b = store().once<string>(name)
  const boom = new Error('card declined by the bank')
  const started = gate()
  let calls = 0
  const runner = a.run('k', async () => {
    calls++
    started.open()
    await sleep(300)
    throw boom
  })
  await started.promise
  const local = Array.from({ length: 5 }, () => a.run('k', () => 'never'))
  const remote = Array.from({ length: 5 }, () => b.run('k', () => 'never'))
  const [r, ...others] = await settle([runner, ...local, ...remote])
  assert.equal(r.ok, false)
  assert.equal(!r.ok && r.error, boom, 'the runner gets its own error back')
  for (const o of others) {
    assert.equal(o.ok, false)
    const e = !o.ok && o.error
    assert.ok(e instanceof RunFailedError, `want RunFailedError, got ${e}`)
    assert.equal(e.runMessage, 'card declined by the bank')
    assert.equal(e.key, 'k')
  }
  assert.equal(calls, 1)
  // KV-12: failure keeps nothing.
  assert.equal(await b.run('k', () => 'second try'), 'second try')
  // A thrown non-Error aborts with its string form.
  await assert.rejects(a.run('s', () => Promise.reject('plain string')), (e) => e === 'plain string')
  assert.equal(await a.run('s', () => 'ok'), 'ok')
})

test('lease extension keeps a 1 s fn with a 300 ms lease the single runner', async () => {
  const admin = redis()
  const name = uniq('extend')
  const a = store().once<number>(name, { lease: '300ms' })
  const b = store().once<number>(name, { lease: 300 })
  let calls = 0
  const started = gate<number>()
  const runner = a.runInfo('k', async ({ token, signal }) => {
    calls++
    started.open(token)
    await sleep(1000)
    assert.equal(signal.aborted, false)
    return 5
  })
  const token = await started.promise
  const waiters = Array.from({ length: 10 }, () => b.runInfo('k', async () => (calls++, 6)))
  for (let i = 0; i < 4; i++) {
    await sleep(200)
    const st = (await admin.call('once.status', `${name}:k`)) as (string | number)[]
    const m = new Map<string, string | number>()
    for (let j = 0; j < st.length; j += 2) m.set(String(st[j]), st[j + 1])
    assert.equal(m.get('state'), 'running')
    assert.equal(Number(m.get('token')), token, 'the claim was not handed over')
    assert.ok(Number(m.get('lease-ms')) <= 300)
  }
  const r = await runner
  const ws = await Promise.all(waiters)
  assert.equal(calls, 1)
  assert.deepEqual([r.value, r.replayed, r.token], [5, false, token])
  assert.ok(ws.every((w) => w.value === 5 && w.replayed))
})

test('an extension that fails slowly does not cost the claim (KV-13)', async () => {
  // A 600 ms lease is extended every 200 ms; the second extension fails
  // after 300 ms, when the lease the first set has 300 ms left. The tick
  // that came meanwhile must go at once, not 200 ms later (after the lapse).
  const s = store()
  const real = s._do.bind(s)
  let extensions = 0
  s._do = async (command: string, ...args: (string | number | Buffer)[]) => {
    if (command === 'once.extend' && ++extensions === 2) {
      await sleep(300)
      throw new Error('injected: a slow network error')
    }
    return real(command, ...args)
  }
  const o = s.once<number>(uniq('slowext'), { lease: 600 })
  const v = await o.run('k', async ({ signal }) => {
    await sleep(1500)
    assert.equal(signal.aborted, false, `the claim was lost (extensions tried: ${extensions})`)
    return 7
  })
  assert.equal(v, 7)
  assert.ok(extensions >= 4, `extensions tried: ${extensions}`)
})

test('a COMPLETE whose reply is lost is not reported as a lost lease (KV-13)', async () => {
  // The socket is reset once COMPLETE is written, before its reply is
  // read: the server stored the answer, and ioredis resends the command on
  // the new connection, where it finds the claim done (STALE).
  const admin = redis()
  const name = uniq('lostreply')
  const s = store()
  const o = s.once<number>(name, { keep: '1h' })
  const r = s.redis as any
  const real = r.call.bind(r)
  let dropped = false
  r.call = (command: string, ...args: unknown[]) => {
    const p = real(command, ...args)
    if (command === 'once.complete' && !dropped) {
      dropped = true
      setImmediate(() => r.stream.destroy())
    }
    return p
  }
  const v = await o.run('k', () => 5).catch(async (e) => {
    const st = await admin.call('once.status', `${name}:k`)
    assert.fail(`run threw ${e}; the server holds ${JSON.stringify(st)}`)
  })
  assert.ok(dropped, 'no COMPLETE reply was dropped: the test did not test')
  assert.equal(v, 5)
})

/**
 * failing makes the calls first…last (from 1; last undefined: all from
 * first) of command on s fail without reaching the server: with reply, as
 * the server's error reply; else as lost on the network.
 */
function failing(s: ReturnType<typeof store>, command: string, first: number, last?: number, reply?: string): { calls: () => number } {
  const real = s._do.bind(s)
  let calls = 0
  s._do = async (c: string, ...args: (string | number | Buffer)[]) => {
    if (c === command) {
      const n = ++calls
      if (n >= first && (last === undefined || n <= last)) {
        throw reply !== undefined ? new ReplyError(reply) : new Error(`injected: ${command} lost on the network`)
      }
    }
    return real(c, ...args)
  }
  return { calls: () => calls }
}

// A COMPLETE that did not take effect: lost on the network, or answered
// with an error reply that says the command did not run and may be sent
// again (TRYAGAIN: proxy mode, a slot being moved; LOADING, MASTERDOWN …:
// an upstream failing over). Such a reply is no refusal of the answer:
// before, the run was aborted and every caller waiting for it told it
// failed (KV-12), though the answer would have been stored.
for (const [how, reply] of [
  ['lost on the network', undefined],
  ['TRYAGAIN', 'TRYAGAIN the slot of the key is moving, try again'],
  ['LOADING', 'LOADING Redis is loading the dataset in memory'],
  ['MASTERDOWN', "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."],
  ['CLUSTERDOWN', 'CLUSTERDOWN The cluster is down'],
] as const) {
  test(`a COMPLETE that never took effect (${how}) is sent again while the claim is still ours (KV-13)`, async () => {
    const admin = redis()
    const name = uniq('resend')
    const s = store()
    const f = failing(s, 'once.complete', 1, 1, reply)
    const got = await s.once<number>(name, { keep: '1h' }).runInfo('k', () => 7)
    assert.deepEqual([got.value, got.replayed], [7, false])
    assert.equal(f.calls(), 2, 'the failed COMPLETE and one more')
    const st = (await admin.call('once.status', `${name}:k`)) as unknown[]
    const m = new Map<string, string>()
    for (let i = 0; i + 1 < st.length; i += 2) m.set(String(st[i]), String(st[i + 1]))
    assert.deepEqual([m.get('state'), Number(m.get('token'))], ['done', got.token])
  })
}

for (const replyMapping of ['legacy', 'resp3'] as const) {
  test(`a COMPLETE that never arrived is sent again, whatever the client's RESP3 reply mapping (${replyMapping}) (KV-13)`, async () => {
    const name = uniq('resend3')
    const s = store({}, { protocol: 3, replyMapping })
    const f = failing(s, 'once.complete', 1, 1)
    const got = await s.once<number>(name, { keep: '1h' }).runInfo('k', () => 7)
    assert.deepEqual([got.value, got.replayed], [7, false])
    assert.equal(f.calls(), 2, 'the failed COMPLETE and one more')
  })
}

test('a COMPLETE lost twice releases the claim to a waiter elsewhere at once (KV-13)', async () => {
  const admin = redis()
  const name = uniq('refused')
  const s = store()
  failing(s, 'once.complete', 1)
  const o = s.once<string>(name, { lease: '30s' })
  const other = store().once<string>(name, { lease: '30s' })
  const first = await held(o, 'k', 'unstorable')
  const second = other.runInfo('k', () => 'stored', { signal: AbortSignal.timeout(10_000) })
  await eventually('the other caller waiting on the server', 5000, async () => (await waiters(admin, `${name}:k`)) === 1)
  first.release()
  const e = await first.error
  assert.ok(!(e instanceof LeaseLostError), `the refused run threw ${e}`)
  const got = await second
  assert.deepEqual([got.value, got.replayed], ['stored', false], 'the waiter elsewhere runs after the release')
})

test('an answer the server refuses fails the run for every caller instead of running fn again (KV-12, KV-13)', async () => {
  const admin = redis()
  const name = uniq('refusedanswer')
  const refusal = 'ERR value is too long (at most 67108855 bytes)'
  const s = store()
  const f = failing(s, 'once.complete', 1, undefined, refusal)
  const o = s.once<string>(name)
  const other = store().once<string>(name)
  const first = await held(o, 'k', 'too long')
  const callers = [o, other].map((x) =>
    x.run('k', () => 'ran again', { signal: AbortSignal.timeout(10_000) }).then(
      (v) => assert.fail(`a waiting caller got ${v}`),
      (e) => e,
    ),
  )
  await eventually('a caller waiting on the server', 5000, async () => (await waiters(admin, `${name}:k`)) === 1)
  first.release()
  const e = await first.error
  assert.ok(String(e).includes(refusal), `the runner threw ${e}`)
  for (const e of await Promise.all(callers)) {
    assert.ok(e instanceof RunFailedError && e.runMessage.includes(refusal), `a waiting caller threw ${e}`)
  }
  assert.equal(f.calls(), 1, 'the refused COMPLETE only')
  assert.equal(await admin.call('once.status', `${name}:k`), null, 'the key is free')
})

test('a lost lease frees the flight at once, while fn, deaf to its signal, still runs (KV-13)', async () => {
  const admin = redis()
  const name = uniq('lostflight')
  const o = store().once<string>(name, { lease: '300ms' })
  const first = await held(o, 'k', 'late') // deaf to its signal
  const second = o.runInfo('k', () => 'second', { signal: AbortSignal.timeout(10_000) })
  await sleep(100) // the second caller is in the flight
  await admin.del(`${name}:k`) // a lapse: the next EXTEND is STALE
  try {
    const got = await second
    assert.deepEqual([got.value, got.replayed], ['second', false])
  } finally {
    first.release()
  }
  assert.ok((await first.error) instanceof LeaseLostError)
  assert.equal(await o.run('k', () => 'again'), 'second')
})

for (const same of [true, false]) {
  test(`a runner whose caller gives up hands the run on to a waiter (${same ? 'same store' : 'other store'}) (KV-9, KV-12)`, async () => {
    const name = uniq('giveup')
    const o = store().once<number>(name)
    const waiterOnce = same ? o : store().once<number>(name)
    const ac = new AbortController()
    const started = gate<void>()
    const runner = o
      .run('k', async ({ signal }) => {
        started.open()
        await untilAborted(signal)
        throw signal.reason
      }, { signal: ac.signal })
      .then(
        () => assert.fail('the runner that gave up returned a value'),
        (e) => e,
      )
    await started.promise
    const waiter = waiterOnce.runInfo('k', () => 7, { signal: AbortSignal.timeout(5000) })
    await sleep(200) // the waiter is in the flight, or in the server's wait
    ac.abort()
    assert.equal(await runner, ac.signal.reason)
    const got = await waiter
    assert.deepEqual([got.value, got.replayed], [7, false], 'the waiter runs fn itself')
  })
}

test('lease lost: the signal aborts with LeaseLostError and the value comes back on the error', async () => {
  const admin = redis()
  const name = uniq('lost')
  const o = store().once<number>(name, { lease: '300ms' })
  let sawAbort: unknown
  const run = o.run('k', async ({ signal }) => {
    await sleep(100)
    await admin.del(`${name}:k`) // acts as a lapse: the claim is gone
    // The extension that finds the claim gone may be answered before the
    // DEL is: the signal may have aborted already.
    await untilAborted(signal)
    sawAbort = signal.reason
    return 42
  })
  const err = await run.then(
    () => assert.fail('run succeeded'),
    (e) => e,
  )
  assert.ok(err instanceof LeaseLostError, `want LeaseLostError, got ${err}`)
  assert.equal(err.hasValue, true)
  assert.equal(err.value, 42)
  assert.equal(err.key, 'k')
  assert.ok(sawAbort instanceof LeaseLostError, 'fn saw its signal abort with LeaseLostError')
  // Nothing was kept: the next run runs.
  assert.equal(await o.run('k', () => 43), 43)

  // When fn fails after its claim is lost, the error carries fn's error.
  const cause = new Error('gave up')
  const err2 = await o
    .run('k2', async ({ signal }) => {
      await admin.del(`${name}:k2`)
      await untilAborted(signal)
      throw cause
    })
    .catch((e) => e)
  assert.ok(err2 instanceof LeaseLostError)
  assert.equal(err2.hasValue, false)
  assert.equal(err2.cause, cause)
})

test('takeover: a claim whose holder died passes to a waiting caller with a new token', async () => {
  const admin = redis()
  const name = uniq('takeover')
  const o = store().once<string>(name)
  const [state, dead] = (await admin.call('once.claim', `${name}:k`, 'lease', 300)) as [string, number]
  assert.equal(state, 'claimed')
  const t0 = Date.now()
  const info = await o.runInfo('k', () => 'took over')
  assert.ok(Date.now() - t0 >= 250, 'waited for the lapse')
  assert.deepEqual([info.value, info.replayed], ['took over', false])
  assert.ok(info.token > dead, 'tokens only grow')
  await assert.rejects(admin.call('once.complete', `${name}:k`, dead, '"late"'), /^ReplyError: STALE/)
  assert.equal(await o.run('k', () => 'again'), 'took over')
})

test('keys are name:key after the client\'s keyPrefix; a plain key answers WRONGTYPE', async () => {
  const admin = redis()
  const name = uniq('prefix')
  const o = store({}, { keyPrefix: 'app:' }).once<number>(name)
  assert.equal(await o.run('k', () => 1), 1)
  assert.equal(await admin.type(`app:${name}:k`), 'once')
  assert.equal(await admin.exists(`${name}:k`), 0)
  await admin.set(`${name}:plain`, 'a string')
  const plain = store().once<number>(name)
  await assert.rejects(plain.run('plain', () => 2), /WRONGTYPE/)
  assert.equal(await admin.get(`${name}:plain`), 'a string')
})
