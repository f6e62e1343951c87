package podworker

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Garbage collection of dead containers and sandboxes, and of the pods
// and cgroups no source holds any more.

// SourcesReady says the caller has upserted every pod it wants: from now
// on garbage collection also removes pods on the node the Workers do not
// hold (kubelet's allSourcesReady).
func (w *Workers) SourcesReady() {
	w.mu.Lock()
	w.sourcesReady = true
	w.mu.Unlock()
}

// CollectGarbage runs one garbage collection pass now.
func (w *Workers) CollectGarbage(ctx context.Context) error {
	w.mu.Lock()
	ready := w.sourcesReady
	w.mu.Unlock()
	var wanted func(types.UID) bool
	if ready {
		wanted = func(uid types.UID) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			_, ok := w.pods[uid]
			return ok
		}
	}
	err := w.syncer.GarbageCollect(ctx, w.o.gcPolicy, wanted)
	if w.o.cgroups != nil && wanted != nil {
		// kubelet's cleanupOrphanedPodCgroups: the Workers remove a pod's
		// directories with its containers, so no volume holds one back.
		if _, cerr := w.o.cgroups.RemoveOrphans(ctx, wanted, nil); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

func (w *Workers) gcLoop(armed chan<- struct{}) {
	defer w.wg.Done()
	if w.o.gcPeriod <= 0 {
		armed <- struct{}{}
		<-w.ctx.Done()
		return
	}
	var t clock.Timer
	w.mu.Lock()
	w.gcAt = w.armAt(&t, w.o.gcPeriod)
	w.mu.Unlock()
	armed <- struct{}{}
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C():
		}
		w.mu.Lock()
		w.gcAt, w.collecting = time.Time{}, true
		w.mu.Unlock()
		if err := w.CollectGarbage(w.ctx); err != nil && w.ctx.Err() == nil {
			w.o.logger.V(1).Info("Garbage collection failed", "err", err)
		}
		w.mu.Lock()
		w.gcAt = w.armAt(&t, w.o.gcPeriod)
		w.collecting = false
		w.idle.Broadcast()
		w.mu.Unlock()
	}
}
