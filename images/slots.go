package images

import (
	"context"
	"sync"
)

// slots is a counting semaphore that admits waiters in arrival order and
// lets a waiter give up with its context. Size 1 is kubelet's serial
// puller, size n its parallel puller with maxParallelImagePulls, and
// unlimited needs no slots at all. Waiting needs no goroutine.
//
// golang.org/x/sync/semaphore.Weighted is also FIFO and context-aware,
// but it cannot say how many callers wait, which the pull tests use to act
// at the right moment without sleeping (and the manager's progress
// reporting could use); for n slots of weight 1 this is the same
// algorithm in 60 lines.
type slots struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n} }

// acquire waits for a slot in FIFO order.
func (s *slots) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.free > 0 && len(s.waiters) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// The slot was handed over as the context ended: pass it on.
		s.releaseLocked()
		return ctx.Err()
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *slots) releaseLocked() {
	if len(s.waiters) > 0 {
		ch := s.waiters[0]
		s.waiters = s.waiters[1:]
		close(ch)
		return
	}
	s.free++
}

// waiting is how many callers wait for a slot.
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters)
}
