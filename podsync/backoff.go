package podsync

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/internal/backoff"
)

// Container restart back-off defaults (kubelet's MaxContainerBackOff and
// its initial period), and the run time after which a container's delay
// starts again from the initial one.
const (
	DefaultBackOffInitial = 10 * time.Second
	DefaultBackOffMax     = 300 * time.Second
	BackOffResetAfter     = 10 * time.Minute
)

// BackOff is the container restart back-off (CrashLoopBackOff) shared by
// SyncPod calls: a delay per container that doubles from 10 s to 300 s and
// starts again once the container ran for more than 10 minutes. Entries
// not updated for that long are dropped as later checks come (at most one
// sweep per maximum delay), as kubelet's back-off GC does. It is safe for
// concurrent use.
type BackOff struct {
	b *backoff.Backoff
}

// NewBackOff returns a back-off with the given delays on clock c (nil:
// real time).
func NewBackOff(c clock.Clock, initial, max time.Duration) *BackOff {
	if c == nil {
		c = clock.RealClock{}
	}
	return &BackOff{b: backoff.New(c, initial, max, func(eventTime, lastUpdate time.Time, _ time.Duration) bool {
		return eventTime.Sub(lastUpdate) > BackOffResetAfter
	})}
}

// Key is kubelet's stable key for a container:
// <pod>_<namespace>_<uid>_<container>_<hex hash>.
func Key(pod *corev1.Pod, c *corev1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%x", pod.Name, pod.Namespace, pod.UID, c.Name, HashContainer(c))
}

// Check is kubelet's doBackOff: a container whose newest instance exited
// at finishedAt is in back-off while less than its delay has passed since
// then; otherwise the delay advances and the container may start. It
// returns the delay in force when in back-off.
func (b *BackOff) Check(key string, finishedAt time.Time) (inBackOff bool, delay time.Duration) {
	if b.b.IsInBackOffSince(key, finishedAt) {
		return true, b.b.Get(key)
	}
	b.b.Next(key, finishedAt)
	return false, 0
}

// Delay returns the current delay for key (0 if none).
func (b *BackOff) Delay(key string) time.Duration { return b.b.Get(key) }

// Reset forgets key, so its container may start at once.
func (b *BackOff) Reset(key string) { b.b.Reset(key) }

// BackOffEntry is one container's back-off: its current delay and when it
// last changed.
type BackOffEntry struct {
	Delay      time.Duration
	LastUpdate time.Time
}

// Entries returns the delay and last update of every key.
func (b *BackOff) Entries() map[string]BackOffEntry {
	snap := b.b.Snapshot()
	out := make(map[string]BackOffEntry, len(snap))
	for k, e := range snap {
		out[k] = BackOffEntry{Delay: e.Delay, LastUpdate: e.LastUpdate}
	}
	return out
}
