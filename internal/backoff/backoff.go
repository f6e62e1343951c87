// Package backoff is client-go's flowcontrol.Backoff without client-go: a
// per-key delay that starts at an initial value and doubles up to a
// maximum, with no jitter, on an injectable clock. kubelet uses it for
// image pulls and for container restarts, with different expiry rules.
// It exists because library packages must not import client-go (its
// dependency tree is what podstart's users avoid); beyond flowcontrol it
// adds a snapshot of entries and a Lookup, and lets the expiry rule vary
// (images: client-go's; containers: kubelet's 10-minute reset).
package backoff

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Expired reports whether an entry last updated at lastUpdate is stale
// at eventTime, so the next delay starts again from the initial value.
type Expired func(eventTime, lastUpdate time.Time, max time.Duration) bool

// DefaultExpired is client-go's rule: stale after twice the maximum.
func DefaultExpired(eventTime, lastUpdate time.Time, max time.Duration) bool {
	return eventTime.Sub(lastUpdate) > 2*max
}

// Backoff tracks delays per key. It is safe for concurrent use.
type Backoff struct {
	clock   clock.Clock
	initial time.Duration
	max     time.Duration
	expired Expired

	mu      sync.Mutex
	entries map[string]*entry
	lastGC  time.Time
}

type entry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// Entry is a snapshot of one key's state.
type Entry struct {
	Delay      time.Duration
	LastUpdate time.Time
}

// New returns a Backoff; a nil expired means DefaultExpired.
func New(c clock.Clock, initial, max time.Duration, expired Expired) *Backoff {
	if expired == nil {
		expired = DefaultExpired
	}
	return &Backoff{clock: c, initial: initial, max: max, expired: expired, entries: map[string]*entry{}}
}

// Get returns the current delay for key (0 if none).
func (b *Backoff) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.delay
	}
	return 0
}

// Next advances key's delay for an event at eventTime: the initial delay
// for a new or stale key, otherwise double, capped at the maximum. At most
// once per maximum delay it also drops every stale key (client-go's GC,
// which kubelet calls on its own), and then reports true.
func (b *Backoff) Next(key string, eventTime time.Time) (collected bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(eventTime, e.lastUpdate, b.max) {
		e = &entry{delay: b.initial}
		b.entries[key] = e
	} else {
		e.delay = min(e.delay*2, b.max)
	}
	now := b.clock.Now()
	e.lastUpdate = now
	if now.Sub(b.lastGC) >= b.max {
		b.gcLocked(now)
		return true
	}
	return false
}

// IsInBackOffSince reports whether less than key's delay has passed since
// eventTime.
func (b *Backoff) IsInBackOffSince(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(eventTime, e.lastUpdate, b.max) {
		return false
	}
	return b.clock.Since(eventTime) < e.delay
}

// Reset forgets key.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC forgets every key that is stale now.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gcLocked(b.clock.Now())
}

func (b *Backoff) gcLocked(now time.Time) {
	b.lastGC = now
	for k, e := range b.entries {
		if b.expired(now, e.lastUpdate, b.max) {
			delete(b.entries, k)
		}
	}
}

// Snapshot returns every key's state.
func (b *Backoff) Snapshot() map[string]Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]Entry, len(b.entries))
	for k, e := range b.entries {
		out[k] = Entry{Delay: e.delay, LastUpdate: e.lastUpdate}
	}
	return out
}

// IsInBackOffSinceUpdate reports whether less than key's delay has passed
// between its last update and eventTime (kubelet's image back-off test).
func (b *Backoff) IsInBackOffSinceUpdate(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(eventTime, e.lastUpdate, b.max) {
		return false
	}
	return eventTime.Sub(e.lastUpdate) < e.delay
}

// Lookup returns key's state.
func (b *Backoff) Lookup(key string) (Entry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return Entry{}, false
	}
	return Entry{Delay: e.delay, LastUpdate: e.lastUpdate}, true
}
