package podworker

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/apistatus"
)

// activeDeadline is kubelet's active deadline handler for a pod just
// synced: past its deadline (apistatus gave it phase Failed,
// DeadlineExceeded), the pod is terminated with its grace period, as
// kubelet's pod worker terminates a pod whose sync found it terminal, and
// is synced again at once (now); before it, the pod is synced again when
// the deadline passes (kubelet checks every second), or at next if
// sooner. next zero: when woken.
func (w *Workers) activeDeadline(p *worker, pod *corev1.Pod, api *corev1.PodStatus, next time.Time) time.Time {
	now := w.o.clock.Now()
	at, ok := apistatus.ActiveDeadline(pod, api)
	switch {
	case !ok:
		return next
	case api.Phase == corev1.PodFailed && api.Reason == apistatus.DeadlineExceeded && !now.Before(at):
		w.mu.Lock()
		terminating := p.terminating
		if !terminating && w.pods[p.uid] == p {
			w.terminateLocked(p, nil)
		}
		w.mu.Unlock()
		if terminating {
			return next
		}
		return now
	case next.IsZero() || at.Before(next):
		return at
	}
	return next
}

// pastActiveDeadline terminates p before a sync when its pod is already
// past its active deadline by the status last generated (the API
// server's before the first): kubelet's SyncPod finds such a pod terminal
// and never reaches its runtime's SyncPod.
func (w *Workers) pastActiveDeadline(p *worker, pod *corev1.Pod) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := pod.Status
	if !p.state.Synced.IsZero() {
		prev = p.state.APIStatus
	}
	if p.terminating || w.pods[p.uid] != p || !apistatus.PastActiveDeadline(pod, &prev, w.o.clock.Now()) {
		return false
	}
	w.terminateLocked(p, nil)
	return true
}
