/**
 * @oncekv/client: the TypeScript client of oncekv's ONCE commands. Run a
 * function once per key, across processes, and keep its answer.
 *
 * ```ts
 * import Redis from 'ioredis'
 * import { Store } from '@oncekv/client'
 *
 * const store = new Store(new Redis('redis://localhost:6379'))
 * const charges = store.once<Receipt>('charges', { keep: '1d' })
 * const receipt = await charges.run(order.id, () => payments.charge(order, { idempotencyKey: order.id }))
 * ```
 *
 * See README.md for what run promises.
 */
export { Store, DEFAULT_WAIT_SLICE, DEFAULT_MAX_BLOCKING_CONNS } from './store.js'
export type { StoreOptions } from './store.js'
export { Once, DEFAULT_LEASE } from './once.js'
export type { OnceOptions, RunOptions, RunContext, RunInfo } from './once.js'
export { jsonCodec } from './codec.js'
export type { Codec } from './codec.js'
export { parseDuration } from './duration.js'
export type { Duration } from './duration.js'
export {
  OnceError,
  RunFailedError,
  LeaseLostError,
  ReentrantError,
  MismatchError,
  CodecError,
} from './errors.js'
