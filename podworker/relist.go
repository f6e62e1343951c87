package podworker

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// The node-wide relist (kubelet's generic PLEG) and the runtime's
// container events, which wake the pods that changed.

// Relisted is one node-wide relist, as WithOnRelist listeners see it.
type Relisted struct {
	// Start is when the relist began, Duration how long it took.
	Start    time.Time
	Duration time.Duration
	// Pods are every pod the runtime has (kubelet's labels), by UID, with
	// their sandboxes and containers; nil when Err is set. Shared: not to
	// be changed.
	Pods map[types.UID]*podsync.PodStatus
	Err  error
}

// Relist relists the node now and wakes the pods that changed.
func (w *Workers) Relist(ctx context.Context) error {
	w.mu.Lock()
	w.gen++
	gen := w.gen
	w.mu.Unlock()
	start := w.o.clock.Now()
	statuses, changed, err := w.syncer.StatusCache().Relist(ctx)
	if len(w.o.onRelist) > 0 {
		r := Relisted{Start: start, Duration: w.o.clock.Since(start), Pods: statuses, Err: err}
		if err != nil {
			r.Pods = nil
		}
		for _, f := range w.o.onRelist {
			f(r)
		}
	}
	if err != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.lastRelist = nil
		for _, p := range w.pods {
			if p.awaiting {
				// No newer view: the loop reads the pod's status itself.
				p.awaiting = false
				w.wakeLocked(p)
			}
		}
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(changed) > 0 {
		w.changed = w.o.clock.Now()
	}
	if gen > w.lastRelistGen {
		w.lastRelist, w.lastRelistGen = statuses, gen
	}
	for uid, p := range w.pods {
		if gen > p.relistedGen {
			p.relisted, p.relistedGen = statuses[uid], gen
		}
		if p.awaiting && p.relistedGen > p.syncedGen {
			p.awaiting = false
			w.wakeLocked(p)
		}
	}
	for _, uid := range changed {
		if p := w.pods[uid]; p != nil {
			w.wakeLocked(p)
		}
	}
	return nil
}

// wake syncs a pod soon (a probe result changed).
func (w *Workers) wake(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pods[uid]; p != nil {
		w.wakeLocked(p)
	}
}

// relistLoop relists every relist period, the period counted from the end
// of the last relist (kubelet's wait.Until), and when an event or a pod
// asks, but no sooner than the relist gap after the last one ended.
func (w *Workers) relistLoop(armed chan<- struct{}) {
	defer w.wg.Done()
	var t clock.Timer
	var tick <-chan time.Time
	armIn := func(d time.Duration) { // w.mu held
		if t != nil {
			t.Stop()
		}
		t = w.o.clock.NewTimer(d)
		tick = t.C()
		w.relistAt = w.o.clock.Now().Add(d)
	}
	arm := func() { // w.mu held
		if w.o.relist > 0 {
			armIn(w.relistPeriodLocked())
		}
	}
	var lastEnd time.Time // when the last relist ended (zero: none yet)
	w.mu.Lock()
	arm()
	w.mu.Unlock()
	armed <- struct{}{}
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick:
		case <-w.relistNow:
			w.mu.Lock()
			if wait := w.o.relistGap - w.o.clock.Since(lastEnd); !lastEnd.IsZero() && wait > 0 {
				// Too soon: the relist is due at the gap's end, and
				// whatever asks until then is served by it. Not queued
				// meanwhile but timed: WaitIdle sees a timer not yet due.
				if w.relistAt.IsZero() || w.relistAt.After(w.o.clock.Now().Add(wait)) {
					armIn(wait)
				}
				w.relistQueued = false
				w.idle.Broadcast()
				w.mu.Unlock()
				continue
			}
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.relistQueued, w.relisting, w.relistAt = false, true, time.Time{}
		w.mu.Unlock()
		if err := w.Relist(w.ctx); err != nil && w.ctx.Err() == nil {
			w.o.logger.V(1).Info("Relist failed", "err", err)
		}
		w.mu.Lock()
		lastEnd = w.o.clock.Now()
		// The next relist one period from the end of this one (kubelet's
		// wait.Until): the relist period, or the evented one on a quiet
		// node.
		if t != nil {
			t.Stop()
			t, tick = nil, nil
		}
		arm()
		w.relisting = false
		w.idle.Broadcast()
		w.mu.Unlock()
	}
}

// relistPeriodLocked is the period until the next relist: the evented one
// while events stream and nothing changed for QuietAfter, else the relist
// period.
func (w *Workers) relistPeriodLocked() time.Duration {
	if w.o.quietRelist > w.o.relist && w.streaming && w.o.clock.Since(w.changed) >= QuietAfter {
		return w.o.quietRelist
	}
	return w.o.relist
}

// streamState notes the event stream opening or ending, both a change:
// what happened while no stream was open is known only from relists, and
// events before the stream took effect are lost.
func (w *Workers) streamState(open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streaming, w.changed = open, w.o.clock.Now()
}

// eventLoop turns the runtime's container events into immediate relists;
// when the stream ends it is opened again after the relist period.
func (w *Workers) eventLoop(es runtime.ContainerEventStreamer) {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		w.streamState(true)
		err := es.StreamContainerEvents(w.ctx, w.onEvent)
		w.streamState(false)
		if w.ctx.Err() != nil {
			return
		}
		if errors.Is(err, runtime.ErrUnimplemented) {
			w.o.logger.V(1).Info("The runtime streams no container events; relisting periodically")
			return
		}
		w.o.logger.V(1).Info("Container event stream ended; relisting periodically", "err", err)
		t := w.o.clock.NewTimer(max(w.o.relist, time.Second))
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// onEvent handles one of the runtime's container events: a relist at
// once, unless the event brings nothing new or concerns no pod to wake.
func (w *Workers) onEvent(ev *runtimeapi.ContainerEventResponse) {
	if w.syncer.StatusCache().Reflects(ev) {
		return // a relist since the change has seen it
	}
	uid := types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid())
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods[uid]
	switch {
	case uid != "" && p == nil:
		// Not a pod of ours (another client's, or one removed): there is
		// no pod to wake; the periodic relist sees it, for the orphan
		// collection (gc.go).
		return
	case p != nil && p.syncing:
		// Most often the pod's own sync made the change; when the sync
		// ends, its loop waits for a relist or asks for one (loop), which
		// sees it: a sandbox and a container started cost one relist, not
		// one per event.
		p.eventSeen = true
	default:
		w.relistQueued = true
		signal(w.relistNow)
	}
	w.changed = w.o.clock.Now()
}
