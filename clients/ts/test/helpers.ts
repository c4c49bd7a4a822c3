// Shared helpers of the tests: they run against a real oncekv server whose
// address is in ONCEKV_ADDR (host:port), with the password in
// ONCEKV_PASSWORD when it has one.
import { after } from 'node:test'
import assert from 'node:assert/strict'
import { Redis, RedisOptions } from 'ioredis'
import { Once, Store, StoreOptions } from '../src/index.js'

function target(): { host: string; port: number; password?: string } {
  const addr = process.env.ONCEKV_ADDR
  if (!addr) {
    throw new Error('ONCEKV_ADDR is not set: run the tests against an oncekv server (go test ./integration -run TSClient does)')
  }
  const i = addr.lastIndexOf(':')
  const host = addr.slice(0, i).replace(/^\[|\]$/g, '') || '127.0.0.1'
  const port = Number(addr.slice(i + 1))
  if (i < 0 || !Number.isInteger(port)) throw new Error(`bad ONCEKV_ADDR ${JSON.stringify(addr)}: want host:port`)
  const password = process.env.ONCEKV_PASSWORD || undefined
  return { host, port, password }
}

const opened: Redis[] = []
const stores: Store[] = []

after(async () => {
  await Promise.all(stores.map((s) => s.close()))
  await Promise.all(opened.map((r) => r.quit().catch(() => r.disconnect())))
})

/** redis returns a new ioredis client of the server, closed after the tests. */
export function redis(opts: RedisOptions = {}): Redis {
  const r = new Redis({ ...target(), maxRetriesPerRequest: 1, ...opts })
  opened.push(r)
  return r
}

/** store returns a new Store on a new client (as another process would have). */
export function store(opts: StoreOptions = {}, redisOpts: RedisOptions = {}): Store {
  const s = new Store(redis(redisOpts), opts)
  stores.push(s)
  return s
}

let seq = 0
const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`

/** uniq returns a name no other test (or earlier run) uses. */
export function uniq(prefix: string): string {
  return `ts-${prefix}-${runId}-${++seq}`
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/**
 * untilAborted resolves when signal aborts, or at once if it has already:
 * an 'abort' listener added after the event would wait for ever.
 */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((r) => signal.addEventListener('abort', () => r(), { once: true }))
}

/** info returns the numeric fields of INFO once. */
export async function info(r: Redis): Promise<Record<string, number>> {
  const text = await r.info('once')
  const out: Record<string, number> = {}
  for (const line of text.split(/\r?\n/)) {
    const m = /^([a-z_]+):(-?\d+)$/.exec(line.trim())
    if (m) out[m[1]] = Number(m[2])
  }
  return out
}

/** clients is the number of connections the server has (CLIENT LIST). */
export async function clients(r: Redis): Promise<number> {
  const text = (await r.client('LIST')) as string
  return text.split('\n').filter((l) => l.trim() !== '').length
}

/** eventually polls cond until it holds, or fails after ms. */
export async function eventually(what: string, ms: number, cond: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    if (await cond()) return
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await sleep(10)
  }
}

/** settle waits for all of ps and returns each one's value or error. */
export async function settle<T>(ps: Promise<T>[]): Promise<({ ok: true; value: T } | { ok: false; error: unknown })[]> {
  const rs = await Promise.allSettled(ps)
  return rs.map((r) => (r.status === 'fulfilled' ? { ok: true as const, value: r.value } : { ok: false as const, error: r.reason }))
}

/** gate is a promise with its resolve function. */
export function gate<T = void>(): { promise: Promise<T>; open: (v: T) => void } {
  let open!: (v: T) => void
  const promise = new Promise<T>((r) => (open = r))
  return { promise, open }
}

/**
 * held starts o.run(key) with a function that returns value once release()
 * is called, deaf to its signal, and resolves when the function runs.
 * error is what the run throws; a run that returns fails the test.
 */
export async function held<T>(o: Once<T>, key: string, value: T): Promise<{ release(): void; error: Promise<unknown> }> {
  const started = gate<void>()
  const proceed = gate<void>()
  const error = o
    .run(key, async () => {
      started.open()
      await proceed.promise
      return value
    })
    .then(
      (v) => assert.fail(`the held run of ${key} returned ${JSON.stringify(v)}`),
      (e) => e,
    )
  await started.promise
  return { release: () => proceed.open(undefined), error }
}

/** waiters is the number of callers waiting on the server for full (ONCE.STATUS), 0 when it is free. */
export async function waiters(r: Redis, full: string): Promise<number> {
  const st = (await r.call('once.status', full)) as unknown[] | null
  for (let i = 0; st !== null && i + 1 < st.length; i += 2) if (String(st[i]) === 'waiters') return Number(st[i + 1])
  return 0
}
