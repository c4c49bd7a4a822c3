/**
 * A duration: a number of milliseconds, or a string of one or more
 * number-unit pairs such as `'500ms'`, `'30s'`, `'1.5h'`, `'1d'` or
 * `'1h30m'` (units `ms`, `s`, `m`, `h`, `d`; a bare number string is
 * milliseconds).
 */
export type Duration = number | string

const units: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
}

const part = /(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?/y

/**
 * parseDuration returns d in milliseconds (possibly fractional). It throws
 * a RangeError for a negative, non-finite or malformed duration.
 */
export function parseDuration(d: Duration, what = 'duration'): number {
  if (typeof d === 'number') {
    if (!Number.isFinite(d) || d < 0) {
      throw new RangeError(`oncekv: ${what} must be a finite, non-negative number of milliseconds, got ${d}`)
    }
    return d
  }
  if (typeof d !== 'string') {
    throw new TypeError(`oncekv: ${what} must be a number of milliseconds or a string like '30s', got ${typeof d}`)
  }
  const s = d.trim()
  let total = 0
  let i = 0
  let parts = 0
  while (i < s.length) {
    part.lastIndex = i
    const m = part.exec(s)
    if (!m) break
    const unit = m[2] ?? (parts === 0 && m.index + m[0].length === s.length ? 'ms' : undefined)
    if (unit === undefined) break
    total += Number(m[1]) * units[unit]
    i = part.lastIndex
    while (s[i] === ' ') i++
    parts++
  }
  if (parts === 0 || i !== s.length || !Number.isFinite(total)) {
    throw new RangeError(`oncekv: bad ${what} ${JSON.stringify(d)}: want milliseconds or a string like '500ms', '30s', '5m', '1h', '1d'`)
  }
  return total
}

/** wholeMs is ms rounded up to a whole number, at least 1 (as the Go client). */
export function wholeMs(ms: number): number {
  return Math.max(Math.ceil(ms), 1)
}
