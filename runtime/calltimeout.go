package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errCallTimedOut is the cause a call's context is cancelled with when the
// watchdog finds it past the call timeout.
var errCallTimedOut = errors.New("CRI call timed out")

// watchdog bounds calls by the call timeout without a gRPC deadline on
// each. A deadline costs a timer on both ends and a grpc-timeout header to
// encode and parse on every call, about a tenth of a fast runtime's round
// trip; the watchdog costs a map entry. One goroutine, alive only while
// calls are in flight, wakes every tick (an eighth of the timeout, at most
// a second) and cancels the calls that are overdue, so a call ends at most
// one tick after its timeout, with ErrDeadlineExceeded as before. The
// runtime sees the cancellation (gRPC resets the stream) instead of a
// deadline known in advance.
type watchdog struct {
	timeout, tick time.Duration

	mu      sync.Mutex
	next    uint64
	calls   map[uint64]watched
	running bool
	closed  bool
	stop    chan struct{}
}

type watched struct {
	due    time.Time
	cancel context.CancelCauseFunc
}

func newWatchdog(timeout time.Duration) *watchdog {
	tick := timeout / 8
	if tick > time.Second {
		tick = time.Second
	}
	if tick <= 0 {
		tick = time.Millisecond
	}
	return &watchdog{timeout: timeout, tick: tick, calls: map[uint64]watched{}, stop: make(chan struct{})}
}

// start returns the call's context and the function that ends the call.
func (w *watchdog) start(ctx context.Context) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	due := time.Now().Add(w.timeout)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return cctx, func() { cancel(nil) }
	}
	id := w.next
	w.next++
	w.calls[id] = watched{due: due, cancel: cancel}
	if !w.running {
		w.running = true
		go w.run()
	}
	w.mu.Unlock()
	return cctx, func() {
		w.mu.Lock()
		delete(w.calls, id)
		w.mu.Unlock()
		cancel(nil)
	}
}

func (w *watchdog) run() {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		w.mu.Lock()
		for id, c := range w.calls {
			if !now.Before(c.due) {
				c.cancel(errCallTimedOut)
				delete(w.calls, id)
			}
		}
		if len(w.calls) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// close stops the watchdog; calls still in flight end with the connection.
func (w *watchdog) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
}

// classifyCall is Classify, with a call the watchdog cancelled reported as
// the deadline it stands for.
func classifyCall(ctx context.Context, err error) error {
	if err != nil && context.Cause(ctx) == errCallTimedOut {
		return &Error{Code: codes.DeadlineExceeded, Class: ErrDeadlineExceeded, Err: status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())}
	}
	return Classify(err)
}
