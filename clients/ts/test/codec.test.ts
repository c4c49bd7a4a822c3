// Codecs: JSON by default, or the one given; every caller decodes its own copy.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Codec, CodecError, RunFailedError } from '../src/index.js'
import { gate, redis, sleep, store, uniq } from './helpers.js'

class Money {
  constructor(
    readonly cents: bigint,
    readonly currency: string,
  ) {}
}

const moneyCodec: Codec<Money> = {
  encode: (m) => `${m.currency} ${m.cents}`,
  decode: (data) => {
    const [currency, cents] = data.toString('utf8').split(' ')
    return new Money(BigInt(cents), currency)
  },
}

test('a custom codec encodes what the server keeps and decodes each replay', async () => {
  const admin = redis()
  const name = uniq('codec')
  const o = store().once<Money>(name, { codec: moneyCodec })
  const big = 123456789012345678901234567890n
  const first = await o.run('k', () => new Money(big, 'EUR'))
  assert.ok(first instanceof Money)
  const again = await o.run('k', () => new Money(0n, 'USD'))
  assert.ok(again instanceof Money)
  assert.equal(again.cents, big)
  assert.equal(again.currency, 'EUR')
  const raw = (await admin.callBuffer('once.claim', `${name}:k`)) as Buffer[]
  assert.equal(raw[0].toString(), 'done')
  assert.equal(raw[1].toString(), `EUR ${big}`)
})

test('binary answers round-trip byte for byte', async () => {
  const bytes: Codec<Uint8Array> = { encode: (v) => v, decode: (d) => new Uint8Array(d) }
  const o = store().once<Uint8Array>(uniq('bytes'), { codec: bytes })
  const data = new Uint8Array(256).map((_, i) => 255 - i)
  await o.run('k', () => data)
  const replay = await o.runInfo('k', () => new Uint8Array())
  assert.equal(replay.replayed, true)
  assert.deepEqual(Buffer.from(replay.value), Buffer.from(data))
})

test('JSON by default: undefined round-trips and callers do not share objects', async () => {
  const name = uniq('json')
  const o = store().once<{ items: number[] }>(name)
  const started = gate()
  const runner = o.run('k', async () => (started.open(), await sleep(100), { items: [1, 2] }))
  await started.promise
  const waiters = [o.run('k', () => ({ items: [] })), o.run('k', () => ({ items: [] }))]
  const [r, w1, w2] = await Promise.all([runner, ...waiters])
  w1.items.push(3)
  assert.deepEqual(r, { items: [1, 2] })
  assert.deepEqual(w2, { items: [1, 2] })
  const v = store().once<void>(uniq('void'))
  let calls = 0
  assert.equal(await v.run('k', async () => void calls++), undefined)
  const replay = await v.runInfo('k', async () => void calls++)
  assert.deepEqual([replay.value, replay.replayed, calls], [undefined, true, 1])
})

test('an answer that cannot be encoded fails the run and keeps nothing', async () => {
  const name = uniq('badenc')
  const a = store().once<unknown>(name)
  const b = store().once<unknown>(name)
  const started = gate()
  const runner = a.run('k', async () => (started.open(), await sleep(200), { n: 1n }))
  await started.promise
  // Caught at once: the waiter's rejection can come before the runner's,
  // and a rejection with no handler yet fails the test.
  const waiter = b.run('k', () => 'never').catch((e) => e)
  await assert.rejects(runner, CodecError)
  const err = await waiter
  assert.ok(err instanceof RunFailedError)
  assert.match(err.runMessage, /encode the answer/)
  assert.equal(await a.run('k', () => 'fine'), 'fine')
})

test('an answer that cannot be decoded is a CodecError', async () => {
  const name = uniq('baddec')
  await store().once<string>(name, { codec: { encode: (s) => s, decode: (d) => d.toString() } }).run('k', () => 'not json')
  await assert.rejects(store().once<string>(name).run('k', () => 'x'), CodecError)
})
