package once

import "github.com/oncekv/oncekv/store"

// MapSizes reports, for tests, the engine's maps' sizes and peaks and how
// many times they were rebuilt (maps.go). Call it inside an exclusive
// store transaction.
func (e *Engine) MapSizes() (running, runningPeak, keys, keysPeak, rebuilds int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running), e.runningPeak, len(e.keys), e.keysPeak, e.rebuilds
}

// ShrinkMin is shrinkMin, for tests.
const ShrinkMin = shrinkMin

// Lapse runs, in a transaction of its own, what a key's lapse timer runs
// when it fires: the settle of a lapse its waiters have not been told of.
// A test that drives the store's clock (badgerdb.Options.Clock) has
// deadlines that the wall-clock timers do not reach while it runs, and
// fires them with this.
func (e *Engine) Lapse(db int, key []byte) error {
	var serr error
	err := e.update(func(tx store.Tx) {
		if _, _, serr = e.settle(tx, wkey{db, string(key)}); serr == ErrWrongType {
			serr = nil
		}
	})
	if err == nil {
		err = serr
	}
	return err
}
