import type { Redis } from 'ioredis'
import { Duration, parseDuration, wholeMs } from './duration.js'
import { OnceError } from './errors.js'
import { Flight } from './flight.js'
import { Once, OnceOptions } from './once.js'

/** The longest a single blocked ONCE.CLAIM … WAIT lasts by default (ms). */
export const DEFAULT_WAIT_SLICE = 5_000

/** The default cap on the connections a Store opens for blocked waits. */
export const DEFAULT_MAX_BLOCKING_CONNS = 8

/** How long a connection for blocked waits may stay unused before it is closed (ms). */
const IDLE_CLOSE = 30_000

/** Options of a Store. */
export interface StoreOptions {
  /**
   * The longest a single blocked wait (ONCE.CLAIM … WAIT) lasts on the
   * server before it is sent again (default 5 s). Shorter slices cost a
   * round trip each; the answer still arrives the moment a run completes.
   */
  waitSlice?: Duration
  /**
   * The most connections (and so server-side waits on distinct keys) the
   * store opens for blocked waits at once (default 8). Further waits queue
   * in the process, each bounded by its caller's signal.
   */
  maxBlockingConns?: number
}

/** A parsed [state, detail] reply of ONCE.CLAIM. */
export interface ClaimReply {
  state: 'done' | 'claimed' | 'running' | 'failed'
  /** done: the answer; failed: the message (as bytes). */
  answer: Buffer
  /** claimed: the token. */
  token: number
}

/** StaleReply marks a -STALE reply: the token no longer holds the claim. */
export class StaleReply extends OnceError {
  override name = 'StaleReply'
}

/** MismatchReply marks a -MISMATCH reply (made public as MismatchError by Once). */
export class MismatchReply extends OnceError {
  override name = 'MismatchReply'
}

/**
 * A Store runs ONCE commands on an ioredis client connected to an oncekv
 * server. Make one per server and share it: callers of the same key on
 * one Store share one server round trip.
 *
 * Short commands (ONCE.COMPLETE, ONCE.ABORT, ONCE.EXTEND) go through the
 * client given. Blocked waits (ONCE.CLAIM … WAIT) never do: they run on
 * connections of their own, made with `redis.duplicate()` (same server,
 * credentials and TLS; each wait in the database the client is in, also
 * one it chose with `select()`) without `commandTimeout` or
 * `socketTimeout`, at most `maxBlockingConns` of them, opened when needed
 * and closed after 30 s unused, or when the client given ends (`quit()`,
 * `disconnect()`), or by `close()`. So a blocked wait never holds up the
 * client's other commands, and no timeout of the client cuts a wait short.
 */
export class Store {
  /** The client given to the constructor. */
  readonly redis: Redis
  /** @internal */
  readonly _slice: number
  /** @internal */
  readonly _flights = new Map<string, Flight>()
  /** @internal */
  readonly _pool: WaitPool
  /** @internal */
  readonly _prefix: string
  /**
   * @internal waitMargin is how long after its slice a wait's reply may
   * come before its connection counts as dead (ms); tests shorten it.
   */
  _waitMargin = OP_TIMEOUT
  /** @internal opTimeout bounds the first claim, without WAIT (ms); tests shorten it. */
  _opTimeout = OP_TIMEOUT
  /**
   * @internal retryFor bounds how long a claim answered TRYAGAIN (or
   * another retryableReply) in a row is sent again (ms); tests shorten it.
   */
  _retryFor = RETRY_FOR
  #closed = false
  readonly #onEnd: () => void

  constructor(redis: Redis, opts: StoreOptions = {}) {
    if (redis == null || typeof (redis as Redis).duplicate !== 'function') {
      throw new TypeError('oncekv: Store needs an ioredis client (new Redis(…))')
    }
    this.redis = redis
    this._slice = wholeMs(parseDuration(opts.waitSlice ?? DEFAULT_WAIT_SLICE, 'waitSlice'))
    const max = opts.maxBlockingConns ?? DEFAULT_MAX_BLOCKING_CONNS
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`oncekv: maxBlockingConns must be a positive integer, got ${max}`)
    }
    this._prefix = redis.options?.keyPrefix ?? ''
    this._pool = new WaitPool(() => blockingConn(redis), max, () => redis.status === 'end')
    this.#onEnd = () => this._pool.drain()
    redis.on('end', this.#onEnd)
  }

  /**
   * once returns the Once named name: its keys are `name:key` on the server
   * (after the client's keyPrefix, if any). Handles with the same name share
   * keys, and on one Store, waits; give them the same options.
   */
  once<T>(name: string, opts: OnceOptions<T> = {}): Once<T> {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError('oncekv: a Once needs a non-empty name')
    }
    return new Once<T>(this, name, opts)
  }

  /** True once close() was called. */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * close closes the connections the store opened for blocked waits (runs
   * still waiting fail). It does not close the client given.
   */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.redis.removeListener('end', this.#onEnd)
    await this._pool.close()
  }

  /** @internal join adds a caller to the flight of (key, fp), starting one if none is under way. */
  _join(key: string, fp: string | undefined, leaseMs: number) {
    if (this.#closed) throw new OnceError('oncekv: the store is closed')
    const id = fp === undefined ? `-${key}` : `+${fp.length}:${fp}:${key}`
    let flight = this._flights.get(id)
    const fresh = flight === undefined
    if (flight === undefined) {
      flight = new Flight(this, id, key, fp, leaseMs)
      this._flights.set(id, flight)
    }
    const member = flight.join()
    if (fresh) flight.start()
    return { flight, member }
  }

  /** @internal unavailable says why no wait can be sent now, if so. */
  _unavailable(): Error | undefined {
    if (this.#closed) return new OnceError('oncekv: the store is closed')
    if (this.redis.status === 'end') return new OnceError('oncekv: the Redis client is closed')
    return undefined
  }

  /**
   * @internal claim sends ONCE.CLAIM key LEASE ms WAIT ms [FINGERPRINT fp]
   * on conn, a wait connection, in the database the client given is in:
   * made with its options, conn starts in options.db, and the client may
   * have SELECTed another since (redis.select()).
   */
  async _claim(conn: Redis, key: string, leaseMs: number, waitMs: number, fp: string | undefined): Promise<ClaimReply> {
    const db = selectedDb(this.redis)
    if (selectedDb(conn) !== db) await conn.select(db)
    return sendClaim(conn.callBuffer('once.claim', ...claimArgs(key, leaseMs, waitMs, fp)))
  }

  /**
   * @internal claimNow sends ONCE.CLAIM key LEASE ms [FINGERPRINT fp],
   * without WAIT, on the client given: the server answers at once.
   */
  _claimNow(key: string, leaseMs: number, fp: string | undefined): Promise<ClaimReply> {
    const sent = sendClaim(this.redis.callBuffer('once.claim', ...claimArgs(key, leaseMs, undefined, fp)))
    return withTimeout(sent, this._opTimeout).catch((e: unknown) => {
      if (e instanceof NoReplyError) {
        // The command goes on (in ioredis' queue while it reconnects, or
        // on a slow link): a claim granted after all would hold the key,
        // unknown to anyone, until its lease ran out. Release it as a
        // lapse when its reply comes.
        sent.then((r) => (r.state === 'claimed' ? this._release(key, r.token) : undefined), () => {})
      }
      throw e
    })
  }

  /** @internal do runs a short ONCE command on the client given. */
  async _do(command: string, ...args: (string | number | Buffer)[]): Promise<void> {
    try {
      await this.redis.call(command, ...args)
    } catch (e) {
      throw serverError(e)
    }
  }

  /**
   * @internal release gives up a claim no one here will run, as a lapse
   * (ONCE.EXTEND … LEASE 1): a waiter elsewhere takes it over, or the key
   * becomes free. Aborting would tell those waiters the run failed.
   */
  async _release(key: string, token: number): Promise<void> {
    try {
      await withTimeout(this._do('once.extend', key, token, 'lease', 1), OP_TIMEOUT)
    } catch {
      // The lease lapses by itself.
    }
  }
}

/** OP_TIMEOUT bounds how long a short ONCE command is waited for (ms). */
export const OP_TIMEOUT = 10_000

/**
 * RETRY_FOR bounds how long a flight sends a claim again while the server
 * answers that it did not run it (retryableReply) (ms): 5 s, the longest
 * proxy mode answers TRYAGAIN while a slot moves. The pauses between
 * tries start at RETRY_MIN and double up to RETRY_MAX.
 */
export const RETRY_FOR = 5_000
export const RETRY_MIN = 10
export const RETRY_MAX = 200

/** NoReplyError is withTimeout's: no reply came in time. */
export class NoReplyError extends OnceError {
  override name = 'NoReplyError'
}

/**
 * withTimeout waits for p for at most ms, then rejects with a NoReplyError
 * (p goes on). A reply that came in time but was not read yet, because
 * the event loop was busy past ms (timers run before sockets are read),
 * still counts: the timeout lets one round of I/O go first.
 */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  let immediate: NodeJS.Immediate | undefined
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      immediate = setImmediate(() => reject(new NoReplyError(`oncekv: no reply within ${ms} ms`)))
    }, ms)
  })
  return Promise.race([p, t]).finally(() => {
    clearTimeout(timer)
    if (immediate !== undefined) clearImmediate(immediate)
  })
}

/**
 * retryableReply says whether e is an error reply that says the command
 * did not run and may be sent again as it is: a slot being moved
 * (TRYAGAIN: proxy mode in front of Redis Cluster), a server loading its
 * data or an upstream failing over (LOADING, MASTERDOWN, CLUSTERDOWN,
 * READONLY). Such a reply is no refusal of what was sent. These are the
 * replies go-redis resends, and the Go client's retryableReply (kv/store.go).
 */
export function retryableReply(e: unknown): boolean {
  return e instanceof Error && e.name === 'ReplyError' && /^(TRYAGAIN|LOADING |MASTERDOWN |CLUSTERDOWN |READONLY )/.test(e.message)
}

/** claimArgs are ONCE.CLAIM's arguments after the command; waitMs undefined: no WAIT. */
function claimArgs(key: string, leaseMs: number, waitMs: number | undefined, fp: string | undefined): (string | number)[] {
  const args: (string | number)[] = [key, 'lease', leaseMs]
  if (waitMs !== undefined) args.push('wait', waitMs)
  if (fp !== undefined) args.push('fingerprint', fp)
  return args
}

/** sendClaim parses the reply of a ONCE.CLAIM sent, mapping its error replies. */
async function sendClaim(reply: Promise<unknown>): Promise<ClaimReply> {
  let v: unknown
  try {
    v = await reply
  } catch (e) {
    throw serverError(e)
  }
  return parseClaimReply(v)
}

function parseClaimReply(v: unknown): ClaimReply {
  if (!Array.isArray(v) || v.length !== 2) {
    throw new OnceError(`oncekv: unexpected ONCE.CLAIM reply ${describe(v)}`)
  }
  const state = bufString(v[0])
  const detail = v[1]
  switch (state) {
    case 'claimed': {
      const token = Number(Buffer.isBuffer(detail) ? detail.toString() : detail)
      if (!Number.isSafeInteger(token) || token < 0) {
        throw new OnceError(`oncekv: ONCE.CLAIM: token ${describe(detail)} is not an integer`)
      }
      return { state, token, answer: EMPTY }
    }
    case 'done':
    case 'failed':
      if (detail != null && !Buffer.isBuffer(detail) && typeof detail !== 'string') {
        throw new OnceError(`oncekv: ONCE.CLAIM: detail ${describe(detail)} is not a string`)
      }
      return { state, token: 0, answer: detail == null ? EMPTY : Buffer.from(detail) }
    case 'running':
      return { state, token: 0, answer: EMPTY }
  }
  throw new OnceError(`oncekv: unexpected ONCE.CLAIM state ${JSON.stringify(state)}`)
}

const EMPTY = Buffer.alloc(0)

function bufString(v: unknown): string | undefined {
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  if (typeof v === 'string') return v
  return undefined
}

function describe(v: unknown): string {
  try {
    return JSON.stringify(v, (_, x) => (x && x.type === 'Buffer' && Array.isArray(x.data) ? Buffer.from(x.data).toString() : x))
  } catch {
    return String(v)
  }
}

/** serverError maps the ONCE error replies to marker errors. */
function serverError(e: unknown): unknown {
  if (e instanceof Error && e.name === 'ReplyError') {
    if (e.message.startsWith('STALE')) return new StaleReply(e.message, { cause: e })
    if (e.message.startsWith('MISMATCH')) return new MismatchReply(e.message.replace(/^MISMATCH /, ''), { cause: e })
  }
  return e
}

/**
 * selectedDb is the database r's commands go to: the one its last SELECT
 * chose (ioredis keeps it, and selects it again after a reconnect), else
 * its db option.
 */
function selectedDb(r: Redis): number {
  return r.condition?.select ?? r.options.db ?? 0
}

/** blockingConn makes a connection for blocked waits from the client's options. */
function blockingConn(redis: Redis): Redis {
  const override: Record<string, unknown> = {
    // No client-side limit cuts a wait short: the server bounds each
    // slice (WAIT ms).
    commandTimeout: undefined,
    socketTimeout: undefined,
    blockingTimeout: undefined,
    enableOfflineQueue: true,
    enableAutoPipelining: false,
    lazyConnect: false,
    keyPrefix: undefined,
  }
  const conn = redis.duplicate(override as Parameters<Redis['duplicate']>[0])
  // Connection errors show as failed waits; do not let ioredis print them.
  conn.on('error', () => {})
  return conn
}

interface Pending {
  resolve(c: Redis | undefined): void
  reject(e: unknown): void
  signal?: AbortSignal
  onAbort?: () => void
}

/**
 * WaitPool holds the connections for blocked waits: one wait per
 * connection at a time (a blocked connection answers nothing else).
 */
export class WaitPool {
  readonly #make: () => Redis
  readonly #max: number
  readonly #ended: () => boolean
  readonly #idle: { conn: Redis; timer: NodeJS.Timeout }[] = []
  readonly #all = new Set<Redis>()
  readonly #queue: Pending[] = []
  #closed = false

  constructor(make: () => Redis, max: number, ended: () => boolean) {
    this.#make = make
    this.#max = max
    this.#ended = ended
  }

  /** size is the number of connections open. */
  get size(): number {
    return this.#all.size
  }

  /** acquire returns a connection, or undefined when signal aborts first. */
  acquire(signal?: AbortSignal): Promise<Redis | undefined> {
    if (this.#closed) return Promise.reject(new OnceError('oncekv: the store is closed'))
    if (signal?.aborted) return Promise.resolve(undefined)
    const idle = this.#idle.pop()
    if (idle) {
      clearTimeout(idle.timer)
      return Promise.resolve(idle.conn)
    }
    if (this.#all.size < this.#max) {
      const conn = this.#make()
      this.#all.add(conn)
      return Promise.resolve(conn)
    }
    return new Promise((resolve, reject) => {
      const p: Pending = { resolve, reject, signal }
      if (signal) {
        p.onAbort = () => {
          const i = this.#queue.indexOf(p)
          if (i >= 0) this.#queue.splice(i, 1)
          resolve(undefined)
        }
        signal.addEventListener('abort', p.onAbort, { once: true })
      }
      this.#queue.push(p)
    })
  }

  /**
   * discard closes a connection whose wait got no reply (a connection dead
   * without a reset): a blocked connection answers nothing else.
   */
  discard(conn: Redis): void {
    this.#drop(conn)
    this.#wakeAfterDrop()
  }

  /** release gives a connection back after its wait. */
  release(conn: Redis): void {
    if (this.#closed || this.#ended() || conn.status === 'end') {
      this.#drop(conn)
      this.#wakeAfterDrop()
      return
    }
    const next = this.#queue.shift()
    if (next) {
      if (next.onAbort) next.signal!.removeEventListener('abort', next.onAbort)
      next.resolve(conn)
      return
    }
    const timer = setTimeout(() => {
      const i = this.#idle.findIndex((x) => x.conn === conn)
      if (i >= 0) {
        this.#idle.splice(i, 1)
        this.#drop(conn)
      }
    }, IDLE_CLOSE)
    timer.unref()
    this.#idle.push({ conn, timer })
  }

  /** drain closes the idle connections (the client given ended). */
  drain(): void {
    for (const { conn, timer } of this.#idle.splice(0)) {
      clearTimeout(timer)
      this.#drop(conn)
    }
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const p of this.#queue.splice(0)) {
      if (p.onAbort) p.signal!.removeEventListener('abort', p.onAbort)
      p.reject(new OnceError('oncekv: the store is closed'))
    }
    this.drain()
    const busy = [...this.#all]
    for (const conn of busy) this.#drop(conn)
  }

  #drop(conn: Redis): void {
    if (!this.#all.delete(conn)) return
    // disconnect(), not quit(): a blocked connection would answer QUIT only
    // after its wait, and the server drops a disconnected client's wait.
    conn.disconnect()
  }

  /** A dropped connection leaves room for a queued acquire. */
  #wakeAfterDrop(): void {
    if (this.#closed || this.#ended()) {
      for (const p of this.#queue.splice(0)) {
        if (p.onAbort) p.signal!.removeEventListener('abort', p.onAbort)
        p.reject(new OnceError(this.#closed ? 'oncekv: the store is closed' : 'oncekv: the Redis client is closed'))
      }
      return
    }
    const next = this.#queue.shift()
    if (next) {
      if (next.onAbort) next.signal!.removeEventListener('abort', next.onAbort)
      const conn = this.#make()
      this.#all.add(conn)
      next.resolve(conn)
    }
  }
}
