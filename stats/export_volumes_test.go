package stats

import "time"

// SetVolumeAnalyzerHooks sets, for tests, a fixed jitter and a callback
// run each time the pod loop or a calculator starts waiting.
func SetVolumeAnalyzerHooks(a *VolumeAnalyzer, jitter func(time.Duration) time.Duration, waiting func()) {
	a.jitter, a.waiting = jitter, waiting
}
