package once

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
