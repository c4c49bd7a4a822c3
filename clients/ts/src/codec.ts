/**
 * A Codec turns answers into the bytes the server keeps, and back.
 *
 * Every caller that shares an answer decodes its own copy from these bytes
 * (also callers in the same process as the runner), so values never alias
 * between callers.
 */
export interface Codec<T> {
  encode(value: T): Uint8Array | string
  decode(data: Buffer): T
}

/**
 * The default codec: JSON (UTF-8). `undefined` (a function that returns
 * nothing) is stored as an empty answer and decodes back to `undefined`.
 * Values that JSON does not round-trip (Date, Map, BigInt, class
 * instances) need a codec of their own.
 */
export const jsonCodec: Codec<any> = {
  encode(value: unknown): string {
    if (value === undefined) return ''
    const s = JSON.stringify(value)
    if (s === undefined) {
      throw new TypeError(`a value of type ${typeof value} cannot be encoded as JSON`)
    }
    return s
  },
  decode(data: Buffer): unknown {
    if (data.length === 0) return undefined
    return JSON.parse(data.toString('utf8'))
  },
}
