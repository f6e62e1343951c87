package podworker

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// ResourceUnpreparer unprepares a killed pod's dynamic resources (DRA
// claims); *dra.Manager is one.
type ResourceUnpreparer interface {
	UnprepareResources(ctx context.Context, pod *corev1.Pod) error
}

// WithResourceClaims makes the Workers unprepare a pod's dynamic
// resources once its kill succeeded, before its volumes, cgroup and
// directories are removed, as kubelet's SyncTerminatingPod calls
// UnprepareDynamicResources after all containers stopped. A failure
// fails the pod's termination step, retried after the error retry; the
// pod stays until its claims are unprepared. The Syncer prepares them
// (podsync.WithResourcePreparer).
func WithResourceClaims(u ResourceUnpreparer) Option {
	return func(o *options) { o.claims = u }
}

// unprepareThenUnmount is the step after a successful kill: the pod's
// claims unprepared, then its volumes unmounted (volumes.go).
func (w *Workers) unprepareThenUnmount(ctx context.Context, pod *corev1.Pod) error {
	if w.o.claims != nil {
		if err := w.o.claims.UnprepareResources(ctx, pod); err != nil {
			return err
		}
	}
	return w.unmountVolumes(ctx, pod)
}
