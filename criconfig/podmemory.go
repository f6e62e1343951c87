package criconfig

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodMemoryLimit is the memory limit kubelet gives the pod's cgroup
// (ResourceConfigForPod, PodLevelResources on as in v1.36): the pod's
// limits (containers summed, init containers as their peak, overhead
// added, or the pod-level limit) for a Guaranteed pod; for a Burstable
// pod only when every container, counted as kubelet counts init
// containers, declares a memory limit or the pod sets one; none for a
// BestEffort pod. Memory-backed volumes take it as an upper bound of
// their size.
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

// memoryLimitsDeclared is ResourceConfigForPod's tracking: every app
// container has a memory limit, and so has every init container once the
// limits of the sidecars before it are added; or the pod has a
// pod-level memory limit.
func memoryLimitsDeclared(pod *corev1.Pod) bool {
	if pod.Spec.Resources != nil && !pod.Spec.Resources.Limits.Memory().IsZero() {
		return true
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Resources.Limits.Memory().IsZero() {
			return false
		}
	}
	sidecars := resource.Quantity{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		m := c.Resources.Limits.Memory().DeepCopy()
		m.Add(sidecars)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = m.DeepCopy()
		}
		if m.IsZero() {
			return false
		}
	}
	return true
}
