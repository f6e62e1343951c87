package apistatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kubelet's active deadline handler's reason and message: the phase of a
// pod active on the node longer than its spec.activeDeadlineSeconds is
// Failed with them.
const (
	DeadlineExceeded        = "DeadlineExceeded"
	DeadlineExceededMessage = "Pod was active on the node longer than the specified deadline"
)

// ActiveDeadline is when the pod's active deadline passes: its start time
// (status, as kubelet's status manager has it) plus
// spec.activeDeadlineSeconds. ok is false without a deadline or a start
// time, as kubelet's activeDeadlineHandler then never fails the pod.
func ActiveDeadline(pod *corev1.Pod, status *corev1.PodStatus) (at time.Time, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || status == nil || status.StartTime == nil || status.StartTime.IsZero() {
		return time.Time{}, false
	}
	return status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second), true
}

// PastActiveDeadline is kubelet's activeDeadlineHandler.pastActiveDeadline:
// the pod has been active for its activeDeadlineSeconds or longer at now.
// The API server lets a running pod's deadline be set or lowered.
func PastActiveDeadline(pod *corev1.Pod, status *corev1.PodStatus, now time.Time) bool {
	at, ok := ActiveDeadline(pod, status)
	return ok && !now.Before(at)
}
