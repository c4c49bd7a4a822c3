// In-process singleflight, as in the Go client (kv/flight.go).
//
// All callers of one key (and fingerprint) on one Store form a flight. The
// flight itself, not any caller, sends ONCE.CLAIM … WAIT, in slices no
// longer than the store's wait slice, on a connection of the store's wait
// pool: so a thousand callers hold one connection and one server wait. A
// caller whose signal aborts just leaves the flight; the flight goes on for
// the others, and when the last one leaves it is abandoned: taken out of
// the store (a new caller starts a new flight) and it stops after the slice
// under way.
//
// The flight's first claim has no WAIT and goes through the client given,
// not the wait pool: a free key's claim, or a kept answer, comes back at
// once, and the pool's few connections are left to the keys that run
// elsewhere, which the flight then waits for there.
//
// A claim answered with a reply that says it did not run and may be sent
// again (retryableReply: TRYAGAIN while proxy mode moves a slot, LOADING
// …) is sent again, paced and for at most the store's retryFor, then the
// callers fail with that reply.
//
// When the server answers "claimed", the flight hands the claim to its
// oldest caller, which runs its function (in its own async context, so the
// re-entrance mark stays with it) and reports back; the others get that
// run's answer as a replay. A caller handed the claim after its signal
// aborted gives it back and the next caller gets it; with no caller left
// the claim is released as a lapse (ONCE.EXTEND … LEASE 1), so that a
// waiter elsewhere takes it over, instead of being aborted, which would
// tell those waiters the run failed.

import type { Redis } from 'ioredis'
import { NoReplyError, RETRY_MAX, RETRY_MIN, retryableReply, withTimeout } from './store.js'
import type { ClaimReply, WaitPool } from './store.js'

/** FlightHost is what a flight needs of its store. */
export interface FlightHost {
  readonly _slice: number
  readonly _waitMargin: number
  readonly _retryFor: number
  readonly _flights: Map<string, Flight>
  readonly _pool: WaitPool
  _unavailable(): Error | undefined
  _claim(conn: Redis, key: string, leaseMs: number, waitMs: number, fp: string | undefined): Promise<ClaimReply>
  _claimNow(key: string, leaseMs: number, fp: string | undefined): Promise<ClaimReply>
  _release(key: string, token: number): Promise<void>
}

/** Outcome is the end of a flight for its callers. */
export type Outcome =
  | { kind: 'done'; answer: Buffer; token: number } // token 0: replayed by the server
  | { kind: 'failed'; message: string }
  | { kind: 'error'; error: unknown }

/** FlightMsg is what a flight tells a caller: "run, you hold token", or the outcome. */
export type FlightMsg = { claimed: true; token: number } | { claimed: false; out: Outcome }

/** RunReport is what the caller that was handed the claim reports back. */
export type RunReport =
  | { kind: 'done'; answer: Buffer; token: number } // completed
  | { kind: 'failed'; message: string } // aborted with message
  | { kind: 'retry' } // the claim was lost or its end is unknown: claim again
  | { kind: 'giveBack' } // the caller did not run: hand the claim on

/** Member is one caller in a flight. */
export class Member {
  served = false
  readonly msg: Promise<FlightMsg>
  #resolve!: (m: FlightMsg) => void
  constructor() {
    this.msg = new Promise((resolve) => (this.#resolve = resolve))
  }
  deliver(m: FlightMsg): void {
    this.served = true
    this.#resolve(m)
  }
}

/** Flight is the shared wait of one key. */
export class Flight {
  readonly #host: FlightHost
  readonly #id: string
  readonly key: string
  readonly #fp: string | undefined
  readonly #leaseMs: number
  readonly #abandon = new AbortController()
  #members: Member[] = [] // callers waiting, oldest first
  #running = false // a caller holds the claim
  #closed = false // no longer in the store's flights
  #onReport: ((r: RunReport) => void) | undefined

  constructor(host: FlightHost, id: string, key: string, fp: string | undefined, leaseMs: number) {
    this.#host = host
    this.#id = id
    this.key = key
    this.#fp = fp
    this.#leaseMs = leaseMs
  }

  /** size is the number of callers waiting in the flight. */
  get size(): number {
    return this.#members.length
  }

  join(): Member {
    const m = new Member()
    this.#members.push(m)
    return m
  }

  start(): void {
    void this.#loop()
  }

  /**
   * leave takes a caller whose signal aborted out of the flight. It
   * returns false when the flight already sent it something, which it must
   * then take.
   */
  leave(m: Member): boolean {
    if (m.served) return false
    const i = this.#members.indexOf(m)
    if (i >= 0) this.#members.splice(i, 1)
    if (this.#members.length === 0 && !this.#running && !this.#closed) {
      this.#close()
      this.#abandon.abort()
    }
    return true
  }

  /**
   * report is the runner's outcome. An outcome for the others is given out
   * before report returns, so that a run that starts after the runner's
   * run returned is not served the old run's outcome (a failure must free
   * the key for the next caller, KV-12).
   */
  report(r: RunReport): void {
    switch (r.kind) {
      case 'done':
        this.#finish({ kind: 'done', answer: r.answer, token: r.token })
        break
      case 'failed':
        this.#finish({ kind: 'failed', message: r.message })
        break
    }
    const f = this.#onReport
    this.#onReport = undefined
    f?.(r)
  }

  /** close takes the flight out of the store: new callers start anew. */
  #close(): void {
    if (this.#host._flights.get(this.#id) === this) this.#host._flights.delete(this.#id)
    this.#closed = true
  }

  /** finish ends the flight, giving out to every caller still there. */
  #finish(out: Outcome): void {
    this.#close()
    this.#running = false
    const ms = this.#members
    this.#members = []
    for (const m of ms) m.deliver({ claimed: false, out })
  }

  /** ready says whether to wait again: false (and closed) when no caller is left. */
  #ready(): boolean {
    if (this.#closed) return false
    if (this.#members.length === 0) {
      this.#close()
      return false
    }
    return true
  }

  /** assign hands the claim to the oldest caller; false when none is left. */
  #assign(token: number): boolean {
    if (this.#closed || this.#members.length === 0) {
      this.#close()
      return false
    }
    const m = this.#members.shift()!
    this.#running = true
    m.deliver({ claimed: true, token })
    return true
  }

  /** resume is called when a run ended without an outcome for the others. */
  #resume(): boolean {
    this.#running = false
    if (this.#members.length === 0) {
      this.#close()
      return false
    }
    return true
  }

  async #loop(): Promise<void> {
    const h = this.#host
    let first = true
    let timeouts = 0 // waits in a row that got no reply
    let retryEnd: number | undefined // when claims answered "not run, send again" in a row stop being resent
    let pause = RETRY_MIN
    try {
      for (;;) {
        if (!this.#ready()) return
        const why = h._unavailable()
        if (why) {
          this.#finish({ kind: 'error', error: why })
          return
        }
        let r: ClaimReply
        const wasFirst: boolean = first
        try {
          if (first) {
            first = false
            r = await h._claimNow(this.key, this.#leaseMs, this.#fp)
          } else {
            const conn = await h._pool.acquire(this.#abandon.signal)
            if (conn === undefined) return // abandoned while queued
            try {
              r = await withTimeout(h._claim(conn, this.key, this.#leaseMs, h._slice, this.#fp), h._slice + h._waitMargin)
            } catch (e) {
              if (!(e instanceof NoReplyError)) {
                h._pool.release(conn)
                throw e
              }
              // The server ends each wait with its slice: no reply long
              // after it means a connection dead without a reset, which no
              // socket timeout of ours would notice. Drop it (and with it
              // the server's wait, if the server is still there), and the
              // idle ones, which the same partition may have cut too, and
              // wait once more on a new one; twice in a row is a failure.
              h._pool.discard(conn)
              h._pool.drain()
              if (++timeouts > 1) throw e
              continue
            }
            h._pool.release(conn)
            timeouts = 0
          }
        } catch (e) {
          if (!retryableReply(e)) throw e
          // The claim did not run and may be sent again as it is: proxy
          // mode answers TRYAGAIN while a slot moves (for at most a few
          // seconds), a server LOADING its data or an upstream failing
          // over answer likewise. Send it again after a pause (10 ms
          // doubling to 200 ms) for up to retryFor, as go-redis does for
          // the Go client; then the callers fail with the last reply.
          // Callers whose signal aborts leave meanwhile; with none left
          // the flight stops.
          const at = Date.now()
          retryEnd ??= at + h._retryFor
          if (at + pause > retryEnd) throw e
          await pauseFor(pause, this.#abandon.signal)
          pause = Math.min(pause * 2, RETRY_MAX)
          first = wasFirst // the same claim again: without WAIT if it was
          continue
        }
        retryEnd = undefined
        pause = RETRY_MIN
        switch (r.state) {
          case 'running':
            continue
          case 'done':
            this.#finish({ kind: 'done', answer: r.answer, token: 0 })
            return
          case 'failed':
            this.#finish({ kind: 'failed', message: r.answer.toString('utf8') })
            return
          case 'claimed':
            if (!(await this.#handClaim(r.token))) return
        }
      }
    } catch (error) {
      this.#finish({ kind: 'error', error })
    }
  }

  /** handClaim hands a claim to callers until one of them ran it; true when the flight must claim again. */
  async #handClaim(token: number): Promise<boolean> {
    for (;;) {
      const report = new Promise<RunReport>((resolve) => (this.#onReport = resolve))
      if (!this.#assign(token)) {
        this.#onReport = undefined
        await this.#host._release(this.key, token)
        return false
      }
      const r = await report
      switch (r.kind) {
        case 'giveBack':
          continue
        case 'done':
        case 'failed':
          return false // report gave it out
        case 'retry':
          return this.#resume()
      }
    }
  }
}

/** pauseFor resolves after ms, or at once when signal aborts. */
function pauseFor(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}
