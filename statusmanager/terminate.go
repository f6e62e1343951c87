package statusmanager

import (
	corev1 "k8s.io/api/core/v1"
)

// terminatedUnknown is what kubelet's TerminatePod gives a container that
// has no terminated state when its pod ends: nothing says it succeeded.
var terminatedUnknown = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
	Reason:   "ContainerStatusUnknown",
	Message:  "The container could not be located when the pod was terminated",
	ExitCode: 137,
}}

// terminatePod is kubelet's TerminatePod for the final status of a pod the
// worker removed: once the pod has initialized, every app container
// without a terminated state gets terminatedUnknown; so does every init
// container up to the last one that ever left waiting (at least the first);
// a phase that is not terminal becomes Failed (a Pending pod never
// started, a Running one may have failed). Without this a pod whose
// containers never ran (an image that cannot be pulled) would stay Pending
// and its object, whose deletion waits for a terminal phase, would never
// go. pod is the pod as the API server last showed it (kubelet's
// hasPodInitialized reads its status there).
func terminatePod(pod *corev1.Pod, status corev1.PodStatus) corev1.PodStatus {
	status = *status.DeepCopy()
	if hasPodInitialized(pod) {
		for i := range status.ContainerStatuses {
			if status.ContainerStatuses[i].State.Terminated == nil {
				status.ContainerStatuses[i].State = *terminatedUnknown.DeepCopy()
			}
		}
	}
	for i := range initializedContainers(status.InitContainerStatuses) {
		if status.InitContainerStatuses[i].State.Terminated == nil {
			status.InitContainerStatuses[i].State = *terminatedUnknown.DeepCopy()
		}
	}
	if status.Phase != corev1.PodSucceeded && !isStatic(pod) {
		status.Phase = corev1.PodFailed // kubelet leaves static pods' phase (its TODO #116484)
	}
	return status
}

// isStatic is kubelet's kubetypes.IsStaticPod: a pod from a source other
// than the API server (its kubernetes.io/config.source annotation); a
// mirror pod carries its static pod's annotation.
func isStatic(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	src, ok := pod.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}

// hasPodInitialized is kubelet's: a pod without init containers has; so
// has one with an app container that ever left waiting, or whose last init
// container completed (a sidecar: runs and started).
func hasPodInitialized(pod *corev1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.LastTerminationState.Terminated != nil || s.State.Waiting == nil {
			return true
		}
	}
	l := len(pod.Status.InitContainerStatuses)
	if l == 0 || l > len(pod.Spec.InitContainers) || pod.Status.InitContainerStatuses[l-1].Name != pod.Spec.InitContainers[l-1].Name {
		return false // kubelet: a mismatch of spec and status
	}
	c, s := pod.Spec.InitContainers[l-1], pod.Status.InitContainerStatuses[l-1]
	if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		return s.State.Running != nil && s.Started != nil && *s.Started
	}
	for _, st := range []corev1.ContainerState{s.LastTerminationState, s.State} {
		if st.Terminated != nil && st.Terminated.ExitCode == 0 {
			return true
		}
	}
	return false
}

// initializedContainers is kubelet's: the statuses without the suffix still
// waiting with no earlier termination (those never tried to start), and at
// least the first.
func initializedContainers(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].State.Waiting == nil || cs[i].LastTerminationState.Terminated != nil {
			return cs[:i+1]
		}
	}
	if len(cs) > 0 {
		return cs[:1]
	}
	return nil
}
