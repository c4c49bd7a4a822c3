// KV-15: a key reused with a different fingerprint is an error.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { MismatchError } from '../src/index.js'
import { gate, redis, sleep, store, uniq } from './helpers.js'

test('a kept answer is not returned for a different fingerprint', async () => {
  const admin = redis()
  const name = uniq('fp')
  const o = store().once<string>(name)
  assert.equal(await o.run('k', () => 'receipt A', { fingerprint: 'hash-A' }), 'receipt A')
  const err = await o.run('k', () => 'receipt B', { fingerprint: 'hash-B' }).catch((e) => e)
  assert.ok(err instanceof MismatchError, `want MismatchError, got ${err}`)
  assert.equal(err.key, 'k')
  // Fingerprints are compared only when both carry one.
  assert.equal(await o.run('k', () => 'none'), 'receipt A')
  assert.equal(await o.run('k', () => 'again', { fingerprint: 'hash-A' }), 'receipt A')
  assert.ok((await admin.info('once')).includes('mismatches:'))
})

test('a running claim is not waited for with a different fingerprint', async () => {
  const name = uniq('fp-running')
  const a = store().once<string>(name)
  const b = store().once<string>(name)
  const started = gate()
  const runner = a.run('k', async () => (started.open(), await sleep(1000), 'A'), { fingerprint: 'A' })
  await started.promise
  const t0 = Date.now()
  await assert.rejects(b.run('k', () => 'B', { fingerprint: 'B' }), MismatchError)
  assert.ok(Date.now() - t0 < 500, 'failed at once, without waiting for the run')
  assert.equal(await b.run('k', () => 'B', { fingerprint: 'A' }), 'A')
  assert.equal(await runner, 'A')
})

test('the fingerprint option derives each call\'s fingerprint from its key', async () => {
  const name = uniq('fp-func')
  let version = 'v1'
  const o = store().once<string>(name, { fingerprint: (key) => `${key}:${version}` })
  assert.equal(await o.run('k', () => 'one'), 'one')
  version = 'v2'
  await assert.rejects(o.run('k', () => 'two'), MismatchError)
  // A call's own fingerprint overrides it; '' means none.
  assert.equal(await o.run('k', () => 'three', { fingerprint: '' }), 'one')
})
