/** OnceError is the base class of the errors this package throws. */
export class OnceError extends Error {
  override name = 'OnceError'
}

/**
 * RunFailedError is thrown to a caller whose run was made by someone else
 * (in this process or another) and failed: the runner aborted with a
 * message, which `runMessage` holds. The key is free again, so a retry
 * runs anew (KV-12).
 */
export class RunFailedError extends OnceError {
  override name = 'RunFailedError'
  /** The key as given to run (without the name prefix). */
  readonly key: string
  /** The message the run was aborted with (the runner's error message). */
  readonly runMessage: string
  constructor(key: string, full: string, runMessage: string) {
    super(`oncekv: run of ${JSON.stringify(full)} failed: ${runMessage}`)
    this.key = key
    this.runMessage = runMessage
  }
}

/**
 * LeaseLostError is thrown by a run whose claim was lost while its
 * function ran: the lease lapsed (or the key was deleted) and the server
 * no longer accepted its answer (-STALE). The function's signal is aborted
 * with this error when the loss is seen during the run.
 *
 * When the function succeeded, `hasValue` is true and `value` is its
 * value: it was computed, but it is not the key's kept answer, and another
 * caller may run (or have run) the function again. When the function
 * failed, `cause` is its error.
 */
export class LeaseLostError<T = unknown> extends OnceError {
  override name = 'LeaseLostError'
  /** The key as given to run (without the name prefix). */
  readonly key: string
  /** The token of the lost claim. */
  readonly token: number
  /** True when the function succeeded and `value` is its value. */
  readonly hasValue: boolean
  /** The function's value (when `hasValue`). */
  readonly value: T | undefined
  constructor(key: string, full: string, token: number, opts: { value?: T; hasValue?: boolean; cause?: unknown } = {}) {
    const why = 'cause' in opts ? `: ${messageOf(opts.cause)}` : ''
    super(`oncekv: lease lost: the claim on ${JSON.stringify(full)} was lost before the answer was stored${why}`,
      'cause' in opts ? { cause: opts.cause } : undefined)
    this.key = key
    this.token = token
    this.hasValue = opts.hasValue ?? false
    this.value = opts.value
  }
}

/**
 * ReentrantError is thrown at once by a run of a key inside its own run
 * (in the function or anything it starts, through the async context): it
 * would wait for itself forever (KV-11).
 */
export class ReentrantError extends OnceError {
  override name = 'ReentrantError'
  /** The key as given to run (without the name prefix). */
  readonly key: string
  constructor(key: string, full: string) {
    super(`oncekv: run of ${JSON.stringify(full)} inside its own run would wait for itself forever`)
    this.key = key
  }
}

/**
 * MismatchError is thrown by a run whose fingerprint differs from the one
 * stored with the key's running claim or kept answer: the key was reused
 * for a different request (KV-15). Nothing changed on the server.
 */
export class MismatchError extends OnceError {
  override name = 'MismatchError'
  /** The key as given to run (without the name prefix). */
  readonly key: string
  constructor(key: string, full: string, serverMessage: string) {
    super(`oncekv: fingerprint mismatch on ${JSON.stringify(full)}: ${serverMessage}`)
    this.key = key
  }
}

/** CodecError is thrown when an answer cannot be encoded or decoded. */
export class CodecError extends OnceError {
  override name = 'CodecError'
  /** The key as given to run (without the name prefix). */
  readonly key: string
  constructor(key: string, full: string, what: 'encode' | 'decode', cause: unknown) {
    super(`oncekv: ${what} the answer of ${JSON.stringify(full)}: ${messageOf(cause)}`, { cause })
    this.key = key
  }
}

/** messageOf is the message a thrown value aborts a run with. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message
  if (typeof e === 'string') return e
  try {
    return String(e)
  } catch {
    return 'aborted'
  }
}
