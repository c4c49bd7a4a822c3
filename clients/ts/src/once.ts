import { AsyncLocalStorage } from 'node:async_hooks'
import { Codec, jsonCodec } from './codec.js'
import { Duration, parseDuration, wholeMs } from './duration.js'
import {
  CodecError,
  LeaseLostError,
  MismatchError,
  OnceError,
  ReentrantError,
  RunFailedError,
  messageOf,
} from './errors.js'
import type { Flight, FlightMsg, Member, RunReport } from './flight.js'
import { MismatchReply, OP_TIMEOUT, StaleReply, Store, retryableReply, withTimeout } from './store.js'

/** The longest delay a Node.js timer takes (ms); longer ones fire at once. */
const MAX_TIMER = 2 ** 31 - 1

/** The lease of a Once made without one (ms): 30 s. */
export const DEFAULT_LEASE = 30_000

/** Options of a Once. */
export interface OnceOptions<T> {
  /**
   * How long each answer is kept after its run completes (ONCE.COMPLETE …
   * KEEP, KV-14); then the key is free and the next run runs again.
   * `0` gives the answer only to the callers waiting for the run at that
   * moment, in this process and others, and keeps nothing: a
   * cross-process singleflight. Without `keep` an answer is kept until
   * its key is deleted.
   */
  keep?: Duration
  /**
   * How long a claim holds without being extended (default 30 s, at least
   * 1 ms). The runner extends it every third of it while its function
   * runs; if the process dies, another caller takes over after at most
   * this long.
   */
  lease?: Duration
  /** How answers are encoded (default: JSON, see jsonCodec). */
  codec?: Codec<T>
  /**
   * Derives each call's fingerprint from its key (KV-15); `undefined` or
   * `''` means none. A call's own `fingerprint` option overrides it.
   */
  fingerprint?: (key: string) => string | undefined
}

/** Options of one call of run or runInfo. */
export interface RunOptions {
  /**
   * Bounds this caller's wait: when it aborts, the call rejects at once
   * with `signal.reason`; a run under way (in this process or another) goes
   * on, and a claim handed to this call is passed on. It is also part of
   * the signal the function gets when this call runs it.
   */
  signal?: AbortSignal
  /**
   * The request's fingerprint, typically a hash of it: a key reused with a
   * different one fails with MismatchError instead of returning someone
   * else's answer (KV-15). `''` means none.
   */
  fingerprint?: string
}

/** What a running function is given. */
export interface RunContext {
  /**
   * Aborts when the claim is lost (reason: a LeaseLostError) or when the
   * caller's own signal aborts. Pass it on to what the function awaits.
   */
  signal: AbortSignal
  /**
   * The run's fencing token (KV-13): it only grows; hand it, or the key,
   * to the downstream service so that its own deduplication covers the gap
   * between its effect and the answer being stored.
   */
  token: number
  /** The key as given to run. */
  key: string
}

/** A run's value with how it was obtained. */
export interface RunInfo<T> {
  /** The answer. */
  value: T
  /**
   * True when this call did not run the function: the answer is a kept
   * one, or the one of a run it waited for.
   */
  replayed: boolean
  /**
   * The run's fencing token when known: always when this call ran the
   * function, and when it shared a run made by another caller in this
   * process; 0 for answers replayed by the server, whose reply does not
   * carry it.
   */
  token: number
}

/**
 * Re-entrance (KV-11): the async context of a running function carries the
 * keys it runs, with the client they run through (any Store made on it
 * reaches the same server, so the same keys). A mark ends with its run: a
 * callback that fn scheduled and that runs the key after fn settled waits
 * for nothing of its own.
 */
interface RunMark {
  redis: Store['redis']
  key: string
  parent: RunMark | undefined
  running: boolean
}

const runs = new AsyncLocalStorage<RunMark>()

function inRun(store: Store, key: string): boolean {
  for (let m = runs.getStore(); m !== undefined; m = m.parent) {
    if (m.running && m.redis === store.redis && m.key === key) return true
  }
  return false
}

/**
 * A Once runs functions once per key and keeps their answers, of type T,
 * on the server. Make one with store.once(name, options).
 */
export class Once<T> {
  readonly store: Store
  readonly name: string
  readonly #keepMs: number | undefined
  readonly #leaseMs: number
  readonly #codec: Codec<T>
  readonly #fpFunc: ((key: string) => string | undefined) | undefined

  /** Use store.once(name, options). */
  constructor(store: Store, name: string, opts: OnceOptions<T>) {
    this.store = store
    this.name = name
    if (opts.keep !== undefined) {
      const keep = parseDuration(opts.keep, 'keep')
      this.#keepMs = keep === 0 ? 0 : wholeMs(keep)
    }
    const lease = parseDuration(opts.lease ?? DEFAULT_LEASE, 'lease')
    if (lease < 1) throw new RangeError(`oncekv: lease ${lease} ms is under a millisecond`)
    this.#leaseMs = wholeMs(lease)
    const codec = opts.codec ?? (jsonCodec as Codec<T>)
    if (typeof codec?.encode !== 'function' || typeof codec?.decode !== 'function') {
      throw new TypeError('oncekv: a codec needs encode and decode functions')
    }
    this.#codec = codec
    if (opts.fingerprint !== undefined && typeof opts.fingerprint !== 'function') {
      throw new TypeError('oncekv: the fingerprint option is a function of the key')
    }
    this.#fpFunc = opts.fingerprint
  }

  /** The lease in milliseconds. */
  get leaseMs(): number {
    return this.#leaseMs
  }

  /** The keep in milliseconds, or undefined when answers are kept until deleted. */
  get keepMs(): number | undefined {
    return this.#keepMs
  }

  /**
   * run returns the answer of key: the kept one, or the one of the run under
   * way (waiting for it), or the one fn computes now, once, for everyone.
   * See runInfo.
   */
  async run(key: string, fn: (run: RunContext) => T | Promise<T>, opts?: RunOptions): Promise<T> {
    return (await this.runInfo(key, fn, opts)).value
  }

  /**
   * runInfo is run that also tells whether this call ran fn, and the run's
   * token. It sends ONCE.CLAIM "name:key" LEASE … (then, if the key runs
   * elsewhere, ONCE.CLAIM … WAIT … on a wait connection), shared with every
   * other caller of the key on the same Store:
   *
   *  - a kept answer, or the answer of a run it waited for, is decoded and
   *    returned with replayed true;
   *  - when this call gets the claim, fn runs (in an async context that
   *    marks the key, for re-entrance) while the lease is extended every
   *    third of it. If fn succeeds, its value is stored (ONCE.COMPLETE, with
   *    keep) and returned; if the server refuses it because the claim was
   *    lost, a LeaseLostError carrying the value is thrown. If fn throws,
   *    the key is freed with its message (ONCE.ABORT) and its error is
   *    rethrown;
   *  - when the run it waited for failed, a RunFailedError with that run's
   *    message is thrown; the key is free again;
   *  - a run of key inside fn fails at once with ReentrantError; a
   *    fingerprint that differs from the key's fails with MismatchError;
   *  - when opts.signal aborts first, the call rejects with its reason at
   *    once; a run under way is not affected.
   */
  async runInfo(key: string, fn: (run: RunContext) => T | Promise<T>, opts: RunOptions = {}): Promise<RunInfo<T>> {
    if (typeof key !== 'string') throw new TypeError('oncekv: the key must be a string')
    if (typeof fn !== 'function') throw new TypeError('oncekv: run needs a function')
    const full = this.store._prefix + this.name + ':' + key
    if (inRun(this.store, full)) throw new ReentrantError(key, full)
    const signal = opts.signal
    signal?.throwIfAborted()
    const fp = this.#fingerprint(key, opts)
    const { flight, member } = this.store._join(full, fp, this.#leaseMs)
    const msg = await waitFor(flight, member, signal)
    if (msg.claimed) return this.#runClaimed(flight, key, full, msg.token, fn, signal)
    const out = msg.out
    switch (out.kind) {
      case 'error':
        if (out.error instanceof MismatchReply) throw new MismatchError(key, full, out.error.message)
        throw out.error
      case 'failed':
        throw new RunFailedError(key, full, out.message)
    }
    let value: T
    try {
      value = this.#codec.decode(out.answer)
    } catch (e) {
      throw new CodecError(key, full, 'decode', e)
    }
    return { value, replayed: true, token: out.token }
  }

  #fingerprint(key: string, opts: RunOptions): string | undefined {
    let fp: string | undefined
    if (opts.fingerprint !== undefined) fp = opts.fingerprint
    else if (this.#fpFunc !== undefined) fp = this.#fpFunc(key)
    if (fp !== undefined && typeof fp !== 'string') throw new TypeError('oncekv: a fingerprint must be a string')
    return fp === '' ? undefined : fp
  }

  /** runClaimed runs fn under the claim token holds and tells the flight. */
  async #runClaimed(
    flight: Flight,
    key: string,
    full: string,
    token: number,
    fn: (run: RunContext) => T | Promise<T>,
    signal: AbortSignal | undefined,
  ): Promise<RunInfo<T>> {
    if (signal?.aborted) {
      flight.report({ kind: 'giveBack' })
      throw signal.reason
    }
    // One report per handed claim: the extender reports a lost lease at
    // once, and what the run does after that is its caller's alone.
    let reported = false
    const report = (r: RunReport) => {
      if (reported) return
      reported = true
      flight.report(r)
    }
    const lost = new AbortController()
    const joint = joinSignals(signal, lost.signal)
    const stop = this.#extend(key, full, token, (e) => {
      // The claim is gone (another caller holds it, or the key was
      // deleted): fn is told, and the flight's other callers claim again
      // now instead of waiting for fn to notice (KV-13).
      lost.abort(e)
      report({ kind: 'retry' })
    })
    const mark: RunMark = { redis: this.store.redis, key: full, parent: runs.getStore(), running: true }
    let value: T
    try {
      value = await runs.run(mark, fn, { signal: joint.signal, token, key })
    } catch (ferr) {
      mark.running = false
      await stop()
      joint.dispose()
      if (signal?.aborted && !lost.signal.aborted) {
        // The caller gave up (its signal aborted) and fn stopped with it:
        // the run was left, not failed. Aborting would tell every caller
        // waiting for this key that it failed; the claim is handed on
        // instead, as by a caller that never started fn (to the next
        // caller here, or released as a lapse for the waiters elsewhere).
        report({ kind: 'giveBack' })
        throw ferr
      }
      const msg = messageOf(ferr)
      const aerr = await this.#command('once.abort', full, token, msg)
      report(aerr === undefined ? { kind: 'failed', message: msg } : { kind: 'retry' })
      if (aerr instanceof StaleReply || lost.signal.aborted) {
        throw new LeaseLostError<T>(key, full, token, { cause: ferr })
      }
      throw ferr
    }
    mark.running = false
    await stop()
    joint.dispose()

    let data: Buffer
    try {
      const enc = this.#codec.encode(value)
      data = typeof enc === 'string' ? Buffer.from(enc, 'utf8') : Buffer.from(enc.buffer, enc.byteOffset, enc.byteLength)
    } catch (e) {
      const err = new CodecError(key, full, 'encode', e)
      const aerr = await this.#command('once.abort', full, token, err.message)
      report(aerr === undefined ? { kind: 'failed', message: err.message } : { kind: 'retry' })
      throw err
    }
    const args: (string | number | Buffer)[] = [full, token, data]
    if (this.#keepMs !== undefined) args.push('keep', this.#keepMs)
    let cerr = await this.#command('once.complete', ...args)
    let aborted: string | undefined
    if (cerr !== undefined) ({ err: cerr, aborted } = await this.#settle(full, token, args, cerr))
    if (cerr === undefined) {
      report({ kind: 'done', answer: data, token })
      return { value, replayed: false, token }
    }
    // The claim was aborted with the server's refusal, and the others fail
    // with it; or the answer was not stored, or whether it was is unknown,
    // and the others ask again.
    report(aborted !== undefined ? { kind: 'failed', message: aborted } : { kind: 'retry' })
    if (cerr instanceof StaleReply) {
      throw new LeaseLostError<T>(key, full, token, { value, hasValue: true })
    }
    throw new OnceError(`oncekv: store the answer of ${JSON.stringify(full)}: ${messageOf(cerr)}`, { cause: cerr })
  }

  /**
   * settle decides a COMPLETE that failed with err, by asking the server
   * (ONCE.STATUS) what it holds; it returns the error that stands, if any,
   * and the message the claim was aborted with, if it was:
   *
   *  - the answer, completed under token: the reply was lost, and the
   *    client's resend (ioredis resends on a reconnect) found the claim
   *    done by this run. It counts as stored;
   *  - the claim, still held by token, and err an error reply: the server
   *    refused the answer (too long, a full disk). Sent again, or computed
   *    again by another caller, it would be refused too: the claim is
   *    aborted with a message saying so, and the callers waiting for the
   *    run fail with it (KV-12);
   *  - the claim, still held by token, and err the network's, or an error
   *    reply that says the command did not run and may be sent again
   *    (retryableReply: TRYAGAIN while a slot moves, LOADING …): the
   *    COMPLETE never took effect. It is sent once more; if that fails
   *    too, the claim is released as a lapse, so that a waiter elsewhere
   *    takes it over now rather than when the lease runs out;
   *  - anything else, or no answer: err.
   */
  async #settle(
    full: string,
    token: number,
    args: (string | number | Buffer)[],
    err: unknown,
  ): Promise<{ err: unknown; aborted?: string }> {
    for (let resent = false; ; resent = true) {
      const st = await this.#status(full)
      if (st === undefined || st.token !== token) return { err }
      if (st.state === 'done') return { err: undefined }
      if (st.state !== 'running') return { err }
      if (err instanceof Error && err.name === 'ReplyError' && !retryableReply(err)) {
        const msg = `the answer could not be stored: ${err.message}`
        if ((await this.#command('once.abort', full, token, msg)) === undefined) return { err, aborted: msg }
        resent = true
      }
      if (resent) {
        await this.store._release(full, token)
        return { err }
      }
      err = await this.#command('once.complete', ...args)
      if (err === undefined) return { err: undefined }
    }
  }

  /** status is the state of full on the server and the token it holds (ONCE.STATUS); undefined when it could not be read. */
  async #status(full: string): Promise<{ state: string; token: number } | undefined> {
    try {
      const st = await withTimeout(this.store.redis.call('once.status', full), OP_TIMEOUT)
      let state = ''
      let token = -1
      const field = (k: unknown, v: unknown) => {
        if (String(k) === 'state') state = String(v)
        if (String(k) === 'token') token = Number(v)
      }
      if (Array.isArray(st)) {
        // RESP2, or RESP3 under ioredis' default "legacy" reply mapping:
        // field, value, …
        for (let i = 0; i + 1 < st.length; i += 2) field(st[i], st[i + 1])
      } else if (st instanceof Map) {
        for (const [k, v] of st) field(k, v)
      } else if (st !== null && typeof st === 'object') {
        // RESP3 with replyMapping "resp3": a map reply is a plain object.
        for (const [k, v] of Object.entries(st)) field(k, v)
      }
      return { state, token }
    } catch {
      return undefined
    }
  }

  /** command sends a short ONCE command, whatever the caller's signal; it returns the error, if any. */
  async #command(command: string, ...args: (string | number | Buffer)[]): Promise<unknown> {
    try {
      await withTimeout(this.store._do(command, ...args), OP_TIMEOUT)
      return undefined
    } catch (e) {
      return e ?? new OnceError(`oncekv: ${command} failed`)
    }
  }

  /**
   * extend keeps the claim alive while fn runs: ONCE.EXTEND every third of
   * the lease. When the server says the claim is gone, it calls lost with
   * a LeaseLostError. The returned function stops it and waits for the
   * extension under way, if any.
   */
  #extend(key: string, full: string, token: number, lost: (e: LeaseLostError<T>) => void): () => Promise<void> {
    const lease = this.#leaseMs
    let pending: Promise<void> | undefined
    let stopped = false
    let missed = false // a tick came while an extension was under way
    const tick = () => {
      if (stopped) return
      if (pending !== undefined) {
        missed = true
        return
      }
      missed = false
      pending = withTimeout(this.store._do('once.extend', full, token, 'lease', lease), Math.min(lease, MAX_TIMER))
        .catch((e) => {
          if (e instanceof StaleReply && !stopped) {
            stopped = true
            clearInterval(timer)
            lost(new LeaseLostError<T>(key, full, token))
          }
          // Other errors (the network): try again at the next tick; the
          // lease is three ticks long.
        })
        .finally(() => {
          pending = undefined
          // A tick that came meanwhile goes now, as a Go ticker's would:
          // an extension that failed after more than a third of the
          // lease is tried again while the lease the last one set runs.
          if (missed) tick()
        })
    }
    const timer = setInterval(tick, Math.min(Math.max(lease / 3, 1), MAX_TIMER))
    return async () => {
      stopped = true
      clearInterval(timer)
      await pending
    }
  }
}

/** waitFor waits for what the flight tells member, or for signal to abort. */
function waitFor(flight: Flight, member: Member, signal: AbortSignal | undefined): Promise<FlightMsg> {
  if (!signal) return member.msg
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      if (flight.leave(member)) reject(signal.reason)
      // else: the flight sent something already; take it.
    }
    signal.addEventListener('abort', onAbort, { once: true })
    member.msg.then((m) => {
      signal.removeEventListener('abort', onAbort)
      resolve(m)
    })
  })
}

/** joinSignals is a signal that aborts when either does; dispose drops the listener on a. */
function joinSignals(a: AbortSignal | undefined, b: AbortSignal): { signal: AbortSignal; dispose(): void } {
  if (!a) return { signal: b, dispose() {} }
  const c = new AbortController()
  if (a.aborted) c.abort(a.reason)
  const onA = () => c.abort(a.reason)
  const onB = () => c.abort(b.reason)
  a.addEventListener('abort', onA, { once: true })
  b.addEventListener('abort', onB, { once: true })
  return {
    signal: c.signal,
    dispose() {
      a.removeEventListener('abort', onA)
      b.removeEventListener('abort', onB)
    },
  }
}
