package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// The loop of one pod: sync until quiet, kill and remove, retries and
// what the listeners hear.

// apiStatus builds the pod's API status from the runtime's view.
func (w *Workers) apiStatus(p *worker, pod *corev1.Pod, status *podsync.PodStatus, terminal bool) corev1.PodStatus {
	w.mu.Lock()
	var prev *corev1.PodStatus
	if !p.state.Synced.IsZero() {
		cp := p.state.APIStatus
		prev = &cp
	}
	w.mu.Unlock()
	in := apistatus.Input{Pod: pod, Status: status, Reasons: w.reasons.For(pod.UID), ResizeError: w.reasons.ResizeFor(pod.UID), Previous: prev,
		RuntimeName: w.o.runtimeName, HostIPs: w.o.hostIPs, Terminal: terminal, Now: w.o.clock.Now(), ProberStart: w.started}
	if w.o.probes != nil {
		in.Probes = w.o.probes
	}
	if w.o.cgroups != nil {
		// Kubelet reads a Running pod's pod-level resources from its
		// cgroup, and an ending pod's in its terminating sync, while the
		// cgroup still exists (apistatus decides which it uses); a cgroup
		// that cannot be read leaves them to the spec.
		ctx, cancel := w.syncContext()
		if cg, err := w.o.cgroups.PodCgroupConfig(ctx, pod); err == nil {
			in.PodCgroup = &cg
		}
		cancel()
	}
	s := apistatus.PodStatus(in)
	if w.o.probes != nil && !terminal {
		w.o.probes.Update(pod, s)
	}
	return s
}

// loop is one pod's goroutine, while the pod has work or a timer: it
// ends when the pod is idle with no retry or resync armed (a steady
// pod), and wakeLocked starts it again. One loop per pod at a time: a
// loop ends only with w.mu held and no wake-up pending, and wakeLocked
// starts one only when none runs.
func (w *Workers) loop(p *worker) {
	defer w.wg.Done()
	var timer, resync clock.Timer
	var timerC, resyncC <-chan time.Time
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		w.mu.Lock()
		w.setTimersLocked(p, time.Time{}, p.resyncAt)
		w.mu.Unlock()
	}
	// idleExit: the loop ended idle; p is then no longer this loop's to
	// touch (a new loop may run it), so the deferred clean-ups are skipped
	// (they would find nothing armed).
	idleExit := false
	defer func() {
		if !idleExit {
			stopTimer()
		}
	}()
	// setResync arms the resync one period from now, or disarms it.
	setResync := func(on bool) {
		if resync != nil {
			resync.Stop()
			resync, resyncC = nil, nil
		}
		var at time.Time
		if on {
			resync = w.o.clock.NewTimer(w.o.resync)
			resyncC = resync.C()
			at = w.o.clock.Now().Add(w.o.resync)
		}
		w.mu.Lock()
		w.setTimersLocked(p, p.retryAt, at)
		w.mu.Unlock()
	}
	defer func() {
		if !idleExit {
			setResync(false)
		}
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-p.wake:
		case <-timerC:
			timer, timerC = nil, nil
		case <-resyncC:
			resync, resyncC = nil, nil
		}
		w.mu.Lock()
		w.setTimersLocked(p, time.Time{}, time.Time{})
		w.setBusyLocked(p, false, true)
		w.mu.Unlock()
		for {
			next, done := w.syncUntilQuiet(p)
			if done {
				return
			}
			stopTimer()
			if next.IsZero() {
				break
			}
			timer = w.o.clock.NewTimer(next.Sub(w.o.clock.Now()))
			timerC = timer.C()
			w.mu.Lock()
			w.setTimersLocked(p, next, p.resyncAt)
			w.mu.Unlock()
			// Checked after the timer exists: a clock that reached next
			// before that would not fire it (a fake clock's zero timer
			// waits for its next step), so such a time is synced now.
			if next.After(w.o.clock.Now()) || w.ctx.Err() != nil {
				break
			}
		}
		setResync(w.o.resync > 0 && !w.steady(p))
		w.mu.Lock()
		if p.eventSeen {
			p.eventSeen = false
			if !p.awaiting {
				w.relistQueued = true
				signal(w.relistNow)
			}
		}
		w.setBusyLocked(p, p.woken, false)
		if !p.woken && timer == nil && resync == nil {
			// Idle with nothing armed: the loop ends (a goroutine's stack
			// less per idle pod); the next wake-up starts it again, and
			// wakeLocked cannot run before running is false.
			w.setTimersLocked(p, time.Time{}, time.Time{})
			p.running, idleExit = false, true
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// steady reports whether p's last sync left nothing for a resync to do:
// it succeeded with nothing to start, kill or update, no retry is
// pending, the pod is not being killed, and nothing about the pod changes
// with time alone (an active deadline, a resize that could not be done).
// Every change that could give a resync work wakes the pod itself: a new
// spec (Upsert), the runtime (a relist or an event), a probe result, a
// back-off's end (NextSync). A steady pod is not resynced; kubelet's
// resync of it would compute the same actions (none) and status.
func (w *Workers) steady(p *worker) bool {
	w.mu.Lock()
	st, terminating := p.state, p.terminating
	w.mu.Unlock()
	if terminating || st.Err != nil || !st.NextSync.IsZero() || st.Result.Error() != nil || len(st.Result.Results) > 0 {
		return false
	}
	if st.Pod == nil || st.Pod.Spec.ActiveDeadlineSeconds != nil {
		return false
	}
	if st.Result.RemountError != nil || w.o.periodicRemount && hasRemountVolume(st.Pod) {
		return false // volumes to set up again (refresh.go)
	}
	if w.o.volumes != nil && hasClaimVolume(st.Pod) {
		// Kubelet's resync hands the pod to its volume manager again
		// (ReprocessPod): that is where a claim's new size is found and
		// the volume expanded on the node.
		return false
	}
	return w.reasons.ResizeFor(p.uid) == nil
}

// syncUntilQuiet syncs p until a sync has nothing left to do, and returns
// when it should next be synced (zero: when woken), or done when the pod
// was removed.
func (w *Workers) syncUntilQuiet(p *worker) (next time.Time, done bool) {
	fresh := false // whether our own status read is newer than the relist's
	for i := 0; w.ctx.Err() == nil; i++ {
		w.mu.Lock()
		pod, terminating, grace := p.pod, p.terminating, p.grace
		p.awaiting = false // woken otherwise, it syncs now
		var status *podsync.PodStatus
		relisted := !fresh && p.relistedGen > p.syncedGen // listed after our last sync ended
		if relisted {
			status = p.relisted
		}
		w.mu.Unlock()

		ctx, cancel := w.syncContext()
		var err error
		switch {
		case relisted && status == nil:
			status = w.syncer.StatusCache().NoInstances(pod)
		case !relisted:
			status, err = w.syncer.Status(ctx, pod)
		}
		if err != nil {
			cancel()
			retry := w.retryAfter(w.o.errorRetry)
			w.record(p, PodState{Status: nil, Err: err, APIStatus: p.lastAPIStatus(w), NextSync: retry})
			return retry, false
		}
		if !terminating && w.needsAdmission(p) {
			rejected, err := w.admitFirst(ctx, p, pod, status)
			if err != nil {
				cancel()
				retry := w.retryAfter(w.o.errorRetry)
				w.record(p, PodState{Status: status, Err: err, APIStatus: p.lastAPIStatus(w), NextSync: retry})
				return retry, false
			}
			if rejected {
				cancel()
				return time.Time{}, true // gone (admit.go)
			}
		}
		if terminating {
			r := w.syncer.KillPod(ctx, pod, status, grace)
			var final corev1.PodStatus
			if r.Error() == nil {
				// The final status, from what the kill left, before the
				// removal takes the instances away.
				if after, serr := w.syncer.Status(ctx, pod); serr == nil {
					status = after
				}
				final = w.apiStatus(p, pod, status, true)
				w.mu.Lock()
				evicted := p.evicted
				w.mu.Unlock()
				if evicted != nil {
					evicted(&final)
				}
				err = w.unprepareThenUnmount(ctx, pod) // claims.go, volumes.go
				if err == nil && w.o.cgroups != nil {
					err = w.o.cgroups.RemovePod(ctx, pod)
				}
				if err == nil {
					err = w.syncer.RemovePod(ctx, pod.UID)
				}
			}
			cancel()
			if r.Error() != nil || err != nil {
				retry := w.retryAfter(w.o.errorRetry)
				w.record(p, PodState{Status: status, Result: r, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
				return retry, false
			}
			if w.o.probes != nil {
				w.o.probes.RemovePod(pod.UID)
			}
			w.reasons.Forget(pod.UID)
			w.remove(p, status, r, final)
			return time.Time{}, true
		}
		if w.pastActiveDeadline(p, pod) {
			cancel()
			continue // terminating: the next round kills the pod
		}
		var secrets []corev1.Secret
		if w.o.secrets != nil {
			secrets, err = w.o.secrets(ctx, pod)
			if err != nil {
				cancel()
				retry := w.retryAfter(w.o.errorRetry)
				w.record(p, PodState{Status: status, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
				return retry, false
			}
		}
		if err := w.mountVolumes(ctx, pod); err != nil { // volumes.go
			cancel()
			retry := w.retryAfter(w.o.errorRetry)
			w.record(p, PodState{Status: status, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
			return retry, false
		}
		if w.o.cgroups != nil {
			if err := w.o.cgroups.EnsurePod(ctx, pod); err != nil {
				cancel()
				retry := w.retryAfter(w.o.errorRetry)
				err = fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
				w.record(p, PodState{Status: status, Err: err, APIStatus: w.apiStatus(p, pod, status, false), NextSync: retry})
				return retry, false
			}
		}
		var preResize error
		if g, ok := w.o.cgroups.(podCgroupGrower); ok {
			// Kubelet's resize order: the pod cgroup grows before the
			// containers (a container's larger CPU limit, resized or at
			// its start after the pod's resize, is refused on cgroup v1
			// above its pod cgroup's quota) and shrinks after them
			// (UpdatePod below). A failure here is the sync's, after it
			// ran.
			preResize = g.GrowPod(ctx, pod)
		}
		r := w.syncer.SyncPod(ctx, pod, status, secrets)
		if preResize != nil {
			r.SyncError = errors.Join(r.SyncError, fmt.Errorf("failed to grow the pod cgroup of %v: %w", pod.UID, preResize))
		}
		if w.o.cgroups != nil && r.Error() == nil {
			// After the containers, as kubelet shrinks a pod's cgroup after
			// them (what grows was raised before them, GrowPod).
			if err := w.o.cgroups.UpdatePod(ctx, pod); err != nil {
				r.SyncError = errors.Join(r.SyncError, fmt.Errorf("failed to update the pod cgroup of %v: %w", pod.UID, err))
			}
		}
		cancel()
		w.reasons.Update(pod.UID, r)
		st := PodState{Status: status, Result: r, APIStatus: w.apiStatus(p, pod, status, false)}
		if r.Error() != nil {
			st.NextSync = w.retryAt(r)
		}
		w.record(p, st)
		if r.Error() != nil {
			return w.activeDeadline(p, pod, &st.APIStatus, st.NextSync), false
		}
		if len(r.Results) == 0 || i >= 20 {
			w.mu.Lock()
			p.chained = 0
			w.mu.Unlock()
			w.setRefresh(p, r) // refresh.go
			return w.activeDeadline(p, pod, &st.APIStatus, time.Time{}), false
		}
		if w.awaitRelist(p) {
			return time.Time{}, false
		}
		fresh = true
	}
	return time.Time{}, false
}

// awaitRelist makes p's next sync wait for a relist that starts after its
// last sync ended, and asks for one now, instead of reading the pod's
// status at once: kubelet's pod worker likewise waits until its PLEG cache
// is newer than the sync. One node-wide relist (two list calls) then
// serves every pod that synced meanwhile, where each pod's own read costs
// two. It reports false, and the loop reads the status itself, after 20
// chained waits without a quiet sync (a pod whose every sync does
// something goes on at the pace of its own reads, as before).
func (w *Workers) awaitRelist(p *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.chained >= 20 {
		p.chained = 0
		return false
	}
	p.chained++
	if p.relistedGen > p.syncedGen {
		w.wakeLocked(p) // a relist began after the sync ended
		return true
	}
	p.awaiting = true
	w.relistQueued = true
	signal(w.relistNow)
	return true
}

// retryAt is when a failed sync is retried, as kubelet's pod workers
// requeue it (completeWork): when a crash-loop back-off ends, if the sync
// met one (the earliest), else after the error retry; the delay at most
// the resync period, then spread by the jitter (kubelet's 0 to 50% more).
// An image pull's failure has no such time (podsync.MinBackOffExpiration).
func (w *Workers) retryAt(r podsync.Result) time.Time {
	d := w.o.errorRetry
	if nextSync, ok := r.NextSync(); ok {
		d = nextSync.Sub(w.o.clock.Now())
	}
	return w.retryAfter(d)
}

// retryAfter is now plus d, at least 0 and at most the resync period,
// spread by the jitter.
func (w *Workers) retryAfter(d time.Duration) time.Time {
	if d < 0 {
		d = 0
	}
	if w.o.resync > 0 && d > w.o.resync {
		d = w.o.resync
	}
	return w.o.clock.Now().Add(w.o.jitter(d))
}

func (w *Workers) syncContext() (context.Context, context.CancelFunc) {
	if w.o.syncDeadline > 0 {
		return context.WithTimeout(w.ctx, w.o.syncDeadline)
	}
	return context.WithCancel(w.ctx)
}

func (w *Workers) record(p *worker, st PodState) {
	w.mu.Lock()
	st.Pod, st.Terminating = p.pod, p.terminating
	st.Synced = w.o.clock.Now()
	w.gen++
	p.syncedGen = w.gen
	if st.Status == nil {
		st.Status = p.state.Status
	}
	p.state = st
	w.mu.Unlock()
	w.notify(p.uid, st)
}

func (p *worker) lastAPIStatus(w *Workers) corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.state.APIStatus
}

func (w *Workers) remove(p *worker, status *podsync.PodStatus, r podsync.Result, final corev1.PodStatus) {
	w.mu.Lock()
	st := PodState{Pod: p.pod, Status: status, Result: r, Synced: w.o.clock.Now(), Terminating: true, Removed: true, APIStatus: final}
	if w.pods[p.uid] == p {
		delete(w.pods, p.uid)
		w.setBusyLocked(p, false, false)
	}
	w.removing++
	w.mu.Unlock()
	w.notify(p.uid, st)
	w.mu.Lock()
	w.removing--
	w.idle.Broadcast()
	w.mu.Unlock()
}
