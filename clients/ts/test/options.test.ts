// Options and durations (no server needed beyond a client object).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DEFAULT_LEASE, parseDuration, Store } from '../src/index.js'
import { redis, uniq } from './helpers.js'

test('durations: milliseconds or unit strings', () => {
  const cases: [number | string, number][] = [
    [250, 250],
    [0, 0],
    ['250', 250],
    ['250ms', 250],
    ['30s', 30_000],
    ['1.5s', 1500],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1m 30s', 90_000],
    [' 2s ', 2000],
  ]
  for (const [d, ms] of cases) assert.equal(parseDuration(d), ms, JSON.stringify(d))
  for (const bad of [-1, NaN, Infinity, '', 'abc', '5x', '-1s', '1s2', 's', '1 d x']) {
    assert.throws(() => parseDuration(bad), RangeError, JSON.stringify(bad))
  }
})

test('options are checked when the Once is made', () => {
  const s = new Store(redis({ lazyConnect: true }))
  assert.equal(s.once(uniq('d')).leaseMs, DEFAULT_LEASE)
  assert.equal(s.once(uniq('d')).keepMs, undefined)
  assert.equal(s.once(uniq('d'), { keep: '1d', lease: '30s' }).keepMs, 86_400_000)
  assert.equal(s.once(uniq('d'), { keep: 0 }).keepMs, 0)
  assert.equal(s.once(uniq('d'), { lease: 0.2 + 1 }).leaseMs, 2)
  assert.throws(() => s.once(uniq('d'), { lease: 0 }), RangeError)
  assert.throws(() => s.once(uniq('d'), { keep: '-5s' }), RangeError)
  assert.throws(() => s.once(''), TypeError)
  assert.throws(() => new Store(redis({ lazyConnect: true }), { maxBlockingConns: 0 }), RangeError)
  assert.throws(() => new Store({} as never), TypeError)
  void s.close()
})
