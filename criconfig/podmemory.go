package criconfig

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodMemoryLimit is the memory limit kubelet v1.37.2 gives the pod's
// cgroup (ResourceConfigForPod, PodLevelResources on): the pod's limits
// (containers summed, init containers as their peak, overhead added, or
// the pod-level limit) for a Guaranteed pod; for a Burstable pod only when
// every init and app container declares a memory limit of its own or the
// pod sets one; none for a BestEffort pod. Memory-backed volumes take it
// as an upper bound of their size.
func PodMemoryLimit(pod *corev1.Pod) (int64, bool) {
	qos := QOSClass(pod)
	if qos == corev1.PodQOSBestEffort {
		return 0, false
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if qos == corev1.PodQOSBurstable && !memoryLimitsDeclared(pod) {
		return 0, false
	}
	return limits.Memory().Value(), true
}

// memoryLimitsDeclared is ResourceConfigForPod's tracking in v1.37: every
// init and app container has a non-zero memory limit, or the pod has a
// pod-level one.
func memoryLimitsDeclared(pod *corev1.Pod) bool {
	if pod.Spec.Resources != nil && !pod.Spec.Resources.Limits.Memory().IsZero() {
		return true
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Resources.Limits.Memory().IsZero() {
				return false
			}
		}
	}
	return true
}
