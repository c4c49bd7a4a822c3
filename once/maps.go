package once

// A Go map never gives back the buckets of its largest size. The
// engine's two maps hold what is in flight (running claims, keys with
// waiters), so a burst of a million concurrent claims would leave tens of
// MB of empty buckets behind for good. Each map is rebuilt once it holds
// a quarter or less of its peak, on the deletion that gets it there: the
// copy costs at most a third of the deletions since the peak, so it is
// paid for, and a map that shrinks and grows within the same range is
// never rebuilt twice for one growth.

// shrinkMin is the smallest peak worth a rebuild.
const shrinkMin = 1 << 12

// grown records a map's size n after an insertion in its peak.
func grown(peak *int, n int) {
	if n > *peak {
		*peak = n
	}
}

// shrunk returns m, or a copy of it sized to its entries when it holds a
// quarter or less of its peak (which then restarts from its size). The
// caller replaces m by the result, holding whatever guards m.
func shrunk[K comparable, V any](m map[K]V, peak *int, rebuilds *int) map[K]V {
	if *peak < shrinkMin || len(m) > *peak/4 {
		return m
	}
	fresh := make(map[K]V, len(m))
	for k, v := range m {
		fresh[k] = v
	}
	*peak = len(m)
	*rebuilds++
	return fresh
}
