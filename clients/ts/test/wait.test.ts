// Waiting: AbortSignal, long waits, the in-process flight, the wait pool.
import { test } from 'node:test'
import net from 'node:net'
import assert from 'node:assert/strict'
import { eventually, clients, gate, info, redis, settle, sleep, store, uniq } from './helpers.js'

test('an AbortSignal cancels a waiter at once without cancelling the runner', async () => {
  const name = uniq('abort')
  const a = store().once<string>(name)
  const b = store().once<string>(name)
  const started = gate()
  let runnerAborted = false
  const runner = a.runInfo('k', async ({ signal }) => {
    started.open()
    await sleep(800)
    runnerAborted = signal.aborted
    return 'done'
  })
  await started.promise
  const remote = new AbortController()
  const local = new AbortController()
  const cancelled = [
    b.run('k', () => 'never', { signal: remote.signal }), // waits on the server
    a.run('k', () => 'never', { signal: local.signal }), // waits in the runner's flight
    b.run('k', () => 'never', { signal: AbortSignal.timeout(150) }),
  ]
  const results = settle(cancelled)
  const stays = [b.runInfo('k', () => 'never'), a.runInfo('k', () => 'never')]
  await sleep(200)
  const t0 = performance.now()
  remote.abort()
  local.abort(new Error('caller gave up'))
  const [r1, r2, r3] = await results
  assert.ok(performance.now() - t0 < 250, 'aborted waiters return at once, while the run goes on')
  assert.ok(!r1.ok && r1.error instanceof Error && r1.error.name === 'AbortError', `remote: ${!r1.ok && r1.error}`)
  assert.ok(!r2.ok && r2.error instanceof Error && r2.error.message === 'caller gave up', `local: ${!r2.ok && r2.error}`)
  assert.ok(!r3.ok && r3.error instanceof Error && r3.error.name === 'TimeoutError', `timeout: ${!r3.ok && r3.error}`)
  const r = await runner
  assert.deepEqual([r.value, r.replayed, runnerAborted], ['done', false, false])
  for (const s of await Promise.all(stays)) assert.deepEqual([s.value, s.replayed], ['done', true])
})

test('an aborted signal fails before claiming anything', async () => {
  const admin = redis()
  const name = uniq('preabort')
  const o = store().once<number>(name)
  await assert.rejects(o.run('k', () => 1, { signal: AbortSignal.abort() }), { name: 'AbortError' })
  assert.equal(await admin.call('once.status', `${name}:k`), null)
})

test('a claim that reaches an abandoned wait is released as a lapse, not aborted', async () => {
  const admin = redis()
  const name = uniq('release')
  const b = store({ waitSlice: '3s' }).once<string>(name)
  const c = store().once<string>(name)
  await admin.call('once.claim', `${name}:k`, 'lease', 400) // a runner that dies
  const ac = new AbortController()
  const gone = b.run('k', () => 'b ran', { signal: ac.signal })
  await sleep(100)
  ac.abort()
  await assert.rejects(gone, { name: 'AbortError' })
  // b's wait is still on the server (the oldest waiter): at the lapse it
  // gets the claim, which b gives on instead of aborting it.
  await sleep(100)
  const info = await c.runInfo('k', () => 'c ran')
  assert.deepEqual([info.value, info.replayed], ['c ran', false])
})

test('waits run in the database the client given has SELECTed, also one chosen after it was made (KV-9)', async () => {
  // The wait connections are duplicates of the client given, made with
  // its options: before, they waited in options.db (0), not in the
  // database a later redis.select() chose, so a caller whose key runs
  // elsewhere claimed the same-named key of database 0 and ran fn beside
  // the real runner; its answer then came back STALE.
  const name = uniq('select')
  for (const [how, db, redisOpts] of [
    ['db option', 4, { db: 4 }],
    ['redis.select() after the client was made', 5, {}],
  ] as const) {
    const s = store({}, redisOpts)
    if (!('db' in redisOpts)) await s.redis.select(db)
    const started = gate()
    const proceed = gate()
    const first = store({}, { db }).once<string>(name).run(how, async () => {
      started.open()
      await proceed.promise
      return 'first'
    })
    await started.promise
    let ran = false
    const waiter = s.once<string>(name).runInfo(how, () => {
      ran = true
      return 'second'
    }, { signal: AbortSignal.timeout(5000) })
    await sleep(200) // the waiter is waiting on the server
    proceed.open()
    const got = await waiter.catch((e) => e)
    assert.deepEqual([got.value, got.replayed, ran], ['first', true, false], `${how}: got ${got}`)
    assert.equal(await first, 'first')
  }
})

test('a first claim whose reply comes too late is released, not left to hold the key for its lease (KV-13)', async () => {
  // The first ONCE.CLAIM (no WAIT) of a flight gets no reply in time (a
  // slow link, or ioredis' offline queue while it reconnects): its callers
  // fail, but the command goes on and the server grants the claim. Before,
  // that claim held the key, run by no one, for its 30 s lease, and every
  // caller of the key in any process waited for it.
  const name = uniq('lateclaim')
  const s = store()
  s._opTimeout = 100
  const r = s.redis as any
  const real = r.callBuffer.bind(r)
  let delayed = 0
  r.callBuffer = (command: string, ...args: unknown[]) => {
    const p = real(command, ...args)
    if (command !== 'once.claim' || delayed++ > 0) return p
    return new Promise((resolve, reject) => setTimeout(() => p.then(resolve, reject), 400))
  }
  await assert.rejects(s.once<string>(name).run('k', () => 'never'), { name: 'NoReplyError' })
  assert.equal(delayed, 1, 'no ONCE.CLAIM was delayed: the test did not test')
  const t0 = performance.now()
  const got = await store().once<string>(name).runInfo('k', () => 'ran', { signal: AbortSignal.timeout(5000) })
  assert.deepEqual([got.value, got.replayed], ['ran', false])
  assert.ok(performance.now() - t0 < 2000, `the other caller waited ${performance.now() - t0} ms`)
})

test('a wait longer than ioredis commandTimeout is not cut short', async () => {
  const name = uniq('long')
  const runner = store().once<string>(name)
  const waiter = store({}, { commandTimeout: 300 }).once<string>(name)
  const started = gate()
  const r = runner.run('k', async () => (started.open(), await sleep(1500), 'slow answer'))
  await started.promise
  const t0 = Date.now()
  assert.equal(await waiter.run('k', () => 'never'), 'slow answer')
  assert.ok(Date.now() - t0 >= 1000)
  await r
})

test('waits are sent in slices and the answer still comes at once', async () => {
  const admin = redis()
  const name = uniq('slices')
  const runner = store().once<string>(name)
  const waiter = store({ waitSlice: 300 }).once<string>(name)
  const started = gate()
  let finished = 0
  const r = runner.run('k', async () => (started.open(), await sleep(1000), (finished = Date.now()), 'sliced'))
  await started.promise
  const before = (await info(admin)).waits
  assert.equal(await waiter.run('k', () => 'never'), 'sliced')
  const late = Date.now() - finished
  const waits = (await info(admin)).waits - before
  assert.ok(waits >= 3, `${waits} server waits for a 1 s run in 300 ms slices`)
  assert.ok(late < 200, `woken ${late} ms after the run, want at once`)
  await r
})

test('callers of one key in one process share one round trip and one connection', async () => {
  const admin = redis()
  const name = uniq('flight')
  const runner = store().once<number>(name)
  const s = store()
  await s.redis.ping() // its own connection is up before counting
  const o = s.once<number>(name)
  const release = gate()
  const started = gate()
  const r = runner.run('k', async () => (started.open(), await release.promise, 99))
  await started.promise
  const before = await info(admin)
  const conns = await clients(admin)
  let calls = 0
  const waiting = Array.from({ length: 50 }, () => o.runInfo('k', () => ++calls))
  await eventually('the server wait', 2000, async () => (await info(admin)).waiting_clients === before.waiting_clients + 1)
  await sleep(100)
  const during = await info(admin)
  assert.equal(during.waits - before.waits, 1, '50 callers, one server wait')
  assert.equal(during.waiting_clients - before.waiting_clients, 1)
  assert.equal((await clients(admin)) - conns, 1, 'one more connection (the store\'s wait connection)')
  // The client's own connection is free for other commands meanwhile.
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now()
    await s.redis.set(`${name}:plain${i}`, i)
    assert.equal(await s.redis.get(`${name}:plain${i}`), String(i))
    assert.ok(performance.now() - t0 < 250, 'SET/GET during the wait')
  }
  release.open()
  await r
  for (const w of await Promise.all(waiting)) assert.deepEqual([w.value, w.replayed], [99, true])
  assert.equal(calls, 0)
})

test('waits on distinct keys use at most maxBlockingConns connections', async () => {
  const admin = redis()
  const name = uniq('pool')
  const runner = store().once<number>(name)
  const s = store({ maxBlockingConns: 2 })
  const o = s.once<number>(name)
  const release = gate()
  const runs = []
  for (let k = 0; k < 4; k++) {
    const started = gate()
    runs.push(runner.run(String(k), async () => (started.open(), await release.promise, k)))
    await started.promise
  }
  const before = (await info(admin)).waiting_clients
  const waiting = Array.from({ length: 12 }, (_, i) => o.run(String(i % 4), () => -1))
  await eventually('two server waits', 2000, async () => (await info(admin)).waiting_clients === before + 2)
  await sleep(100)
  assert.equal((await info(admin)).waiting_clients, before + 2)
  assert.equal(s._pool.size, 2)
  release.open()
  await Promise.all(runs)
  assert.deepEqual(await Promise.all(waiting), Array.from({ length: 12 }, (_, i) => i % 4))
})

test('free and kept keys are claimed on the client given, with no wait connection', async () => {
  const name = uniq('first')
  const s = store({ maxBlockingConns: 1 })
  const o = s.once<string>(name)
  let calls = 0
  const keys = 40
  for (const round of ['fresh', 'kept']) {
    const runs = Array.from({ length: keys * 3 }, (_, i) =>
      o.runInfo(String(i % keys), async () => (calls++, `v${i % keys}`)),
    )
    const got = await Promise.all(runs)
    got.forEach((r, i) => {
      assert.equal(r.value, `v${i % keys}`, `${round} caller ${i}`)
      if (round === 'kept') assert.equal(r.replayed, true, `kept caller ${i} ran again`)
    })
  }
  assert.equal(calls, keys)
  assert.equal(s._pool.size, 0, 'no wait connection opened')
})

test('close() ends the store\'s wait connections; the client given stays open', async () => {
  const admin = redis()
  const name = uniq('close')
  const runner = store().once<number>(name)
  const s = store()
  await s.redis.ping()
  const started = gate()
  const release = gate()
  const r = runner.run('k', async () => (started.open(), await release.promise, 1))
  await started.promise
  const conns = await clients(admin)
  const waiting = s.once<number>(name).run('k', () => 2)
  await eventually('the wait connection', 2000, async () => (await clients(admin)) === conns + 1)
  await s.close()
  await assert.rejects(waiting)
  await eventually('the wait connection closed', 2000, async () => (await clients(admin)) === conns)
  await assert.rejects(s.once<number>(name).run('k', () => 3), /closed/)
  assert.equal(await s.redis.ping(), 'PONG')
  release.open()
  await r
})

/** freezer is a TCP proxy to the server whose connections can be frozen: they stay open and carry nothing more, as after a network partition. New connections still go through. */
async function freezer(): Promise<{ port: number; freeze(): void; close(): void }> {
  const [host, port] = (process.env.ONCEKV_ADDR ?? '').split(/:(?=[^:]*$)/)
  const pairs: [net.Socket, net.Socket][] = []
  const srv = net.createServer((down) => {
    const up = net.connect(Number(port), host.replace(/^\[|\]$/g, '') || '127.0.0.1')
    down.pipe(up)
    up.pipe(down)
    const quiet = () => {}
    down.on('error', quiet)
    up.on('error', quiet)
    pairs.push([down, up])
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  return {
    port: (srv.address() as net.AddressInfo).port,
    freeze() {
      for (const [down, up] of pairs) {
        down.unpipe(up)
        up.unpipe(down)
        down.pause()
        up.pause()
      }
    },
    close() {
      srv.close()
      for (const [down, up] of pairs.splice(0)) {
        down.destroy()
        up.destroy()
      }
    },
  }
}

test('a wait whose connection died without a reset is sent again on another', async () => {
  const name = uniq('frozen')
  const proxy = await freezer()
  const s = store({ waitSlice: 200 }, { host: '127.0.0.1', port: proxy.port })
  try {
    s._waitMargin = 300
    const waiter = s.once<string>(name)
    const runner = store().once<string>(name)
    const started = gate<void>()
    const proceed = gate<void>()
    const ran = runner.run('k', async () => {
      started.open()
      await proceed.promise
      return 'answer'
    })
    await started.promise
    const got = waiter.run('k', () => 'not me', { signal: AbortSignal.timeout(10_000) })
    // A second wait, on another key, holds a second connection; once its
    // run completes that connection is idle in the pool, frozen with the
    // rest below.
    const started2 = gate<void>()
    const proceed2 = gate<void>()
    const ran2 = runner.run('k2', async () => {
      started2.open()
      await proceed2.promise
      return 'other'
    })
    await started2.promise
    const got2 = waiter.run('k2', () => 'not me', { signal: AbortSignal.timeout(10_000) })
    await eventually('two wait connections', 5000, () => s._pool.size === 2)
    await sleep(100)
    proceed2.open()
    assert.equal(await ran2, 'other')
    assert.equal(await got2, 'other')
    proxy.freeze() // the wait under way never gets its reply; the idle connection is dead too
    await sleep(300)
    proceed.open()
    assert.equal(await ran, 'answer')
    assert.equal(await got, 'answer')
  } finally {
    s.redis.disconnect() // its connection is frozen too: QUIT would wait for ever
    proxy.close()
  }
})

test('a wait reply that came while the event loop was busy is taken, not cut as a dead connection (KV-10)', async () => {
  // KEEP 0: the answer goes only to the callers waiting when the run
  // completes. A reply already read by the kernel, whose processing the
  // event loop delayed past slice + margin, must still be that answer.
  const admin = redis()
  const name = uniq('busyloop')
  const s = store({ waitSlice: 1000 })
  s._waitMargin = 100
  const full = `${name}:k`
  const claimed = (await admin.call('once.claim', full, 'lease', 30_000)) as [string, number]
  assert.equal(claimed[0], 'claimed')
  const got = s.once<string>(name).run('k', () => 'ran again', { signal: AbortSignal.timeout(10_000) })
  await eventually('the waiter waiting on the server', 5000, async () => {
    const st = (await admin.call('once.status', full)) as unknown[]
    for (let i = 0; i + 1 < st.length; i += 2) if (String(st[i]) === 'waiters') return Number(st[i + 1]) === 1
    return false
  })
  const done = admin.call('once.complete', full, claimed[1], JSON.stringify('answer'), 'keep', 0)
  const until = Date.now() + 1500 // past slice + margin: the event loop is busy
  while (Date.now() < until) {
    // a synchronous computation
  }
  assert.equal(await done, 'OK')
  assert.equal(await got, 'answer')
})
