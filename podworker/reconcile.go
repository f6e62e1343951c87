package podworker

import (
	"errors"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/apistatus"
)

// kubelet's local annotations (kubetypes.ConfigSourceAnnotationKey,
// ConfigMirrorAnnotationKey, ConfigFirstSeenAnnotationKey): a pod source's
// own bookkeeping, never a change of the pod.
var localAnnotations = map[string]bool{
	"kubernetes.io/config.source": true,
	"kubernetes.io/config.mirror": true,
	"kubernetes.io/config.seen":   true,
}

// differSemantically is kubelet's podsDifferSemantically: the spec,
// labels, deletion timestamp and grace period, or the annotations (the
// local ones aside) changed. A change of the status alone is not one.
func differSemantically(old, pod *corev1.Pod) bool {
	return !reflect.DeepEqual(old.Spec, pod.Spec) ||
		!reflect.DeepEqual(old.Labels, pod.Labels) ||
		!reflect.DeepEqual(old.DeletionTimestamp, pod.DeletionTimestamp) ||
		!reflect.DeepEqual(old.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds) ||
		!annotationsEqual(old.Annotations, pod.Annotations)
}

// annotationsEqual is kubelet's isAnnotationMapEqual.
func annotationsEqual(a, b map[string]string) bool {
	for k, v := range b {
		if localAnnotations[k] {
			continue
		}
		if av, ok := a[k]; !ok || av != v {
			return false
		}
	}
	for k := range a {
		if localAnnotations[k] {
			continue
		}
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// needsReadinessReconcile is kubelet's NeedToReconcilePodReadiness: a pod
// with readiness gates whose Ready condition, as the API server holds it,
// says other than what its conditions (a gate's, set by another
// controller) now give. Only such a status change syncs the pod. As
// kubelet's, it reads the app containers' statuses alone, so a gated pod
// with sidecars (whose statuses are init container statuses) counts as
// unknown and is synced at every status change, as kubelet syncs it.
func needsReadinessReconcile(pod *corev1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	want := apistatus.ReadyCondition(pod, &pod.Status, pod.Status.Conditions, pod.Status.ContainerStatuses, pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status != want.Status || c.Message != want.Message
		}
	}
	return false
}

// Reconcile takes a pod as its source saw it (an informer's add or
// update) and does with it what kubelet's pod config does: a pod new to
// the Workers, or one whose spec, labels, annotations or deletion changed
// (kubelet's ADD, UPDATE, DELETE), is Upsert; a pod that differs from the
// one held only in its status (kubelet's RECONCILE: the echo of the status
// the node wrote, a condition another controller set) replaces the held
// object without a sync, unless a readiness gate's condition now disagrees
// with the pod's Ready condition (kubelet's NeedToReconcilePodReadiness)
// or the phase the API server holds changed (the status reads it, and a
// steady pod has no periodic resync here to pick it up, as kubelet's
// does), which syncs it. Upsert, by contrast, always syncs: a caller's
// resync.
func (w *Workers) Reconcile(pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("podworker: nil pod")
	}
	w.mu.Lock()
	p := w.pods[pod.UID]
	if p == nil || w.closed || p.terminating || p.pod == nil || differSemantically(p.pod, pod) {
		w.mu.Unlock()
		return w.Upsert(pod)
	}
	phase := p.pod.Status.Phase
	p.pod = pod.DeepCopy()
	p.state.Pod = p.pod
	// The phase the API server holds is an input of the status (a
	// Running pod's resources are read from its cgroup, a terminal phase
	// is kept): kubelet's periodic resync picks its change up, and a
	// steady pod here has none, so the change syncs the pod once.
	if needsReadinessReconcile(pod) || pod.Status.Phase != phase {
		w.wakeLocked(p)
	}
	w.mu.Unlock()
	return nil
}
