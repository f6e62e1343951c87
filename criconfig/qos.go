package criconfig

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// OOM score adjustments kubelet gives by QoS class (pkg/kubelet/qos).
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
)

// QOSClass is kubelet v1.37's GetPodQOS (status.qosClass wins when set):
// with pod-level resources that name a supported resource (cpu, memory,
// huge pages), the pod-level block alone decides; otherwise each init and
// app container is classed by its CPU and memory (a request equal to its
// limit and non-zero: Guaranteed; both zero or absent: BestEffort; else
// Burstable) and the pod is Burstable as soon as one container is, or when
// its containers' classes differ. A pod-level block with no supported
// resource (empty, or only ephemeral storage) no longer decides
// (PodLevelResourcesFixKubeletQOSClass, on by default in v1.37).
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var class corev1.PodQOSClass
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := requirementsQOS(&list[i].Resources)
			switch {
			case c == corev1.PodQOSBurstable:
				return c
			case class == "":
				class = c
			case class != c:
				return corev1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return corev1.PodQOSBestEffort
	}
	return class
}

// requirementsQOS classes one set of requirements by CPU and memory: the
// same class for both, or Burstable.
func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var class corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		c := corev1.PodQOSGuaranteed
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			c = corev1.PodQOSBestEffort
		}
		if class != "" && class != c {
			return corev1.PodQOSBurstable
		}
		class = c
	}
	return class
}

// Static and mirror pods, and pods at system-critical priority, are
// critical to kubelet (pkg/kubelet/types).
func isCriticalPod(pod *corev1.Pod) bool {
	if src, ok := pod.Annotations["kubernetes.io/config.source"]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations["kubernetes.io/config.mirror"]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= 2000000000
}

func isNodeCriticalPod(pod *corev1.Pod) bool {
	return isCriticalPod(pod) && pod.Spec.PriorityClassName == "system-node-critical"
}

func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// OOMScoreAdj is kubelet's GetContainerOOMScoreAdjust for a node with
// memoryCapacity bytes of memory.
func OOMScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int64 {
	if isNodeCriticalPod(pod) {
		return GuaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		memoryCapacity = 1
	}
	req := c.Resources.Requests.Memory().Value()
	var remaining int64
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		remaining = remainingPodMemReqPerContainer(pod)
	}
	adj := 1000 - (1000*(req+remaining))/memoryCapacity
	if isSidecar(pod, c) {
		minReq := minRegularContainerMemory(pod) + remaining
		if m := 1000 - (1000*minReq)/memoryCapacity; adj > m {
			adj = m
		}
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj == BestEffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

func minRegularContainerMemory(pod *corev1.Pod) int64 {
	if len(pod.Spec.Containers) == 0 {
		return 0
	}
	m := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
	for i := range pod.Spec.Containers[1:] {
		if v := pod.Spec.Containers[i+1].Resources.Requests.Memory().Value(); v < m {
			m = v
		}
	}
	return m
}

// remainingPodMemReqPerContainer spreads the pod-level memory request not
// claimed by containers evenly over all containers (KEP-2837); none when
// the containers claim more than the pod (v1.37).
func remainingPodMemReqPerContainer(pod *corev1.Pod) int64 {
	if pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if n == 0 {
		return 0
	}
	claimed := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return max(pod.Spec.Resources.Requests.Memory().Value()-claimed.Memory().Value(), 0) / n
}
