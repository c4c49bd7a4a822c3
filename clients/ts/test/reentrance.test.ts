// KV-11: a run of a key inside its own run fails at once.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ReentrantError, Store } from '../src/index.js'
import { sleep, store, uniq } from './helpers.js'

async function elapsed<T>(p: Promise<T>): Promise<[T | unknown, number]> {
  const t0 = performance.now()
  const r = await p.then(
    (v) => v,
    (e) => e,
  )
  return [r, performance.now() - t0]
}

test('a run of the same key inside its own run throws ReentrantError at once', async () => {
  const o = store().once<string>(uniq('reent'), { lease: '300ms' })
  let inner: unknown
  let took = 0
  const v = await o.run('k', async () => {
    ;[inner, took] = await elapsed(o.run('k', () => 'inner'))
    return 'outer'
  })
  assert.equal(v, 'outer')
  assert.ok(inner instanceof ReentrantError, `want ReentrantError, got ${inner}`)
  assert.equal(inner.key, 'k')
  assert.ok(took < 250, `took ${took} ms: detected, not timed out`)
})

test('re-entrance is seen through timers, promises and other handles of the name', async () => {
  const s = store()
  const name = uniq('reent-deep')
  const o = s.once<number>(name)
  const same = s.once<number>(name) // another handle, same keys, same store
  const errs = await o.run('k', async () => {
    const viaTimer = await new Promise((r) => setTimeout(() => r(o.run('k', () => 1).catch((e) => e)), 10))
    const viaMicrotask = await Promise.resolve().then(() => same.run('k', () => 2).catch((e) => e))
    const viaImmediate = await new Promise((r) => setImmediate(() => r(same.runInfo('k', () => 3).catch((e) => e))))
    return [viaTimer, viaMicrotask, viaImmediate].filter((e) => e instanceof ReentrantError).length
  })
  assert.equal(errs, 3)
})

test('re-entrance is seen through another Store made on the same client (KV-11)', async () => {
  // The same client is the same server, so the same key: before, the
  // nested run waited for its own run, whose lease the outer run kept
  // extending, until its signal aborted.
  const s = store()
  const twin = new Store(s.redis)
  try {
    const name = uniq('reent-twin')
    let inner: unknown
    let took = 0
    const v = await s.once<string>(name).run('k', async () => {
      ;[inner, took] = await elapsed(twin.once<string>(name).run('k', () => 'inner', { signal: AbortSignal.timeout(1000) }))
      return 'outer'
    })
    assert.equal(v, 'outer')
    assert.ok(inner instanceof ReentrantError, `want ReentrantError, got ${inner}`)
    assert.ok(took < 250, `took ${took} ms: detected, not timed out`)
  } finally {
    await twin.close()
  }
})

test('nested runs of other keys work, and each key of the chain is guarded', async () => {
  const s = store()
  const o = s.once<string>(uniq('nest'))
  const v = await o.run('a', async () => {
    const b = await o.run('b', async () => {
      const c = await o.run('c', () => 'c')
      const a = await o.run('a', () => 'a again').catch((e) => e)
      assert.ok(a instanceof ReentrantError, 'a inside b inside a')
      return 'b+' + c
    })
    return 'a+' + b
  })
  assert.equal(v, 'a+b+c')
})

test('concurrent callers, and callbacks that outlive the run, are not re-entrant', async () => {
  const s = store()
  const o = s.once<string>(uniq('notreent'))
  let late: Promise<string> | undefined
  const v = await o.run('k', async () => {
    // Scheduled inside the run, runs the key after the run is over: it
    // waits for nothing of its own, so it gets the kept answer.
    late = new Promise((r, j) => setTimeout(() => o.run('k', () => 'late ran').then(r, j), 100))
    await sleep(20)
    return 'kept'
  })
  assert.equal(v, 'kept')
  assert.equal(await late, 'kept')
  // Another store is another client: nesting across stores is not seen
  // as re-entrance (it may be a different server); a different key is fine.
  const other = store().once<string>(uniq('notreent-other'))
  assert.equal(await o.run('x', () => other.run('x', () => 'y')), 'y')
})
