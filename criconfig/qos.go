package criconfig

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// OOM score adjustments kubelet gives by QoS class (pkg/kubelet/qos).
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
)

// QOSClass is kubelet's ComputePodQOS (status.qosClass wins when set):
// CPU and memory requests and limits of every container, or the pod-level
// resources when the pod sets them.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(into corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		if cur, ok := into[name]; ok {
			q = q.DeepCopy()
			q.Add(cur)
		}
		into[name] = q
	}
	qosResource := func(n corev1.ResourceName) bool { return n == corev1.ResourceCPU || n == corev1.ResourceMemory }
	if pr := pod.Spec.Resources; pr != nil {
		for n, q := range pr.Requests {
			if qosResource(n) && q.Sign() == 1 {
				add(requests, n, q)
			}
		}
		if len(pr.Limits) > 0 {
			found := 0
			for n, q := range pr.Limits {
				if qosResource(n) && q.Sign() == 1 {
					add(limits, n, q)
					found++
				}
			}
			if found < 2 {
				guaranteed = false
			}
		}
	} else {
		all := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
		for i := range all {
			c := &all[i]
			for n, q := range c.Resources.Requests {
				if qosResource(n) && q.Sign() == 1 {
					add(requests, n, q)
				}
			}
			found := 0
			for n, q := range c.Resources.Limits {
				if qosResource(n) && q.Sign() == 1 {
					add(limits, n, q)
					found++
				}
			}
			if found < 2 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for n, req := range requests {
			if lim, ok := limits[n]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
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
// claimed by containers evenly over all containers (KEP-2837).
func remainingPodMemReqPerContainer(pod *corev1.Pod) int64 {
	if pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if n == 0 {
		return 0
	}
	claimed := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return (pod.Spec.Resources.Requests.Memory().Value() - claimed.Memory().Value()) / n
}
