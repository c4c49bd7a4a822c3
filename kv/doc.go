// Package kv is the Go client of oncekv's ONCE commands: run a function
// once per key, across processes, and keep its answer.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	store := kv.New(rdb)
//	defer store.Close()
//	charges, err := kv.OpenOnce[Receipt](store, "charges", kv.Keep(24*time.Hour))
//	…
//	receipt, err := charges.Run(ctx, order.ID, func(ctx context.Context) (Receipt, error) {
//		return payments.Charge(ctx, order, order.ID) // pass the key downstream too
//	})
//
// # What Run promises
//
// For one key, on one server (the contract's KV-8 to KV-15):
//
//   - While an answer is kept (Keep), every Run returns it and fn does not
//     run (KV-8). Without Keep it is kept until the key is deleted.
//   - When the key is free, exactly one of any number of concurrent Runs,
//     in any process, runs fn; the others wait and get its answer the
//     moment it is stored (KV-9, KV-10), decoded into their own copy.
//   - A Run of a key inside its own run — through the context handed to
//     fn, including from goroutines fn starts with it, and through any
//     Store made on the same client — fails at once with ErrReentrant
//     instead of waiting for itself (KV-11). Pass fn's context on: a Run
//     made with an unrelated context, or through a Store on another
//     client, cannot be detected.
//   - A failed run keeps nothing: fn's error (or panic) frees the key,
//     callers waiting for that run get ErrRunFailed with its message, and
//     the next Run runs again (KV-12).
//   - The runner's claim has a lease, extended in the background while fn
//     runs; if the runner dies, one waiting caller takes the run over. A
//     runner that lost its claim is told so: fn's context is cancelled
//     with cause ErrLeaseLost, and its answer is refused (ErrLeaseLost,
//     with the value), while the callers of the key that share its run
//     in this process claim again at once, without waiting for fn to
//     return. The token in RunInfo only grows and can be given to a
//     downstream service as a fencing token (KV-13).
//   - An answer whose COMPLETE failed is checked with ONCE.STATUS: one
//     stored under the run's token (the reply was lost) is a success. A
//     claim still held after an error reply (the server refused the
//     answer: too long, a full disk) is aborted with that reply, and the
//     callers waiting for the run fail with it (KV-12). A claim still held
//     after a network error (the COMPLETE never arrived), or after a reply
//     that says the command did not run and may be sent again (TRYAGAIN
//     while proxy mode moves a slot, LOADING, MASTERDOWN, CLUSTERDOWN,
//     READONLY), gets the answer once more, and if that fails too, Run
//     fails and releases the claim,
//     so that a waiting caller takes the run over at once rather than
//     when the lease runs out.
//   - A claim answered with a reply that says it did not run and may be
//     sent again (TRYAGAIN while proxy mode moves a slot, for up to 5 s;
//     LOADING, MASTERDOWN, CLUSTERDOWN, READONLY), once go-redis' own
//     retries ran out, is sent again as it was, the first one (without
//     WAIT) as much as a wait, after a pause of 10 ms doubling up to
//     200 ms, for at most 5 s from the first such reply in a row; then
//     Run fails with the last reply. Meanwhile each caller is bounded by
//     its context, as in any wait, and when the last one has left no
//     more claims go out.
//   - A key reused with a different fingerprint fails with ErrMismatch
//     instead of returning another request's answer (KV-15).
//   - A caller's context bounds only its own wait: when it ends, Run
//     returns ctx.Err() at once, and a run under way, in this process or
//     another, goes on. A blocked wait is sent in slices, so no socket read
//     timeout cuts it short and no deadline is overrun. The runner's own
//     caller giving up is no failure either: fn's context (derived from
//     the caller's) is cancelled, and if fn then returns an error the
//     claim is handed on, to another caller of the key, here or
//     elsewhere, who runs fn, rather than aborted.
//   - Callers of the same key on one Store share one server round trip
//     and one connection (singleflight), and blocked waits run on
//     connections of their own, so they never starve the pool that other
//     commands use (see Store).
//
// # What it does not promise
//
// In the words of the contract: "It runs a key at most once while its
// answer is kept; it cannot make an effect happen exactly once. If the
// runner dies after its side effect and before COMPLETE, the lease lapses
// and the next caller runs again. Pass the key (or the token) to the
// downstream service too, so that its own deduplication covers that gap.
// A declined payment that must not be retried is an answer to keep, not
// an error to abort with."
//
// So: return outcomes that must not be retried (a declined card) as
// values, not errors; an error means "not done, try again". A Run that
// returns ErrLeaseLost ran fn, but its answer was not kept, and another
// caller may run fn again. Keep(0) shares a run among the callers waiting
// at that moment only: a later Run runs again.
package kv
