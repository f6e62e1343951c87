package criconfig

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	netutils "k8s.io/utils/net"
)

// FieldRefValue is kubelet's value for an env var's fieldRef or
// resourceFieldRef, which need nothing but the pod, the node and the pod's
// IPs. ok is false for the references that need an API client
// (configMapKeyRef, secretKeyRef) or the pod's volumes (fileKeyRef).
func FieldRefValue(pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource, podIPs []string, node Node) (value string, ok bool, err error) {
	switch {
	case src == nil:
		return "", false, nil
	case src.FieldRef != nil:
		v, err := podFieldValue(pod, src.FieldRef.FieldPath, podIPs, node)
		return v, true, err
	case src.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, c, src.ResourceFieldRef, node)
		return v, true, err
	}
	return "", false, nil
}

func podFieldValue(pod *corev1.Pod, path string, podIPs []string, node Node) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		// kubelet always knows its node's IPs (getHostIPsAnyWay fails
		// otherwise); an empty value would be a guess.
		hostIPs := NodeHostIPs(node.HostIPs)
		if len(hostIPs) == 0 {
			return "", unknownNodeFact("fieldRef %s: the node's IPs are unknown (Node.HostIPs)", path)
		}
		if path == "status.hostIP" {
			return hostIPs[0], nil
		}
		return strings.Join(hostIPs, ","), nil
	case "status.podIP", "status.podIPs":
		if pod.Spec.HostNetwork && len(podIPs) == 0 {
			// A host-network pod's IPs are the node's (kubelet's
			// generateAPIPodStatus, whose PodIPs SyncPod passes on).
			podIPs = NodeHostIPs(node.HostIPs)
			if len(podIPs) == 0 {
				return "", unknownNodeFact("fieldRef %s of a host-network pod: the node's IPs are unknown (Node.HostIPs)", path)
			}
		}
		if path == "status.podIPs" {
			return strings.Join(podIPs, ","), nil
		}
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// NodeHostIPs is kubelet's GetNodeHostIPs on addresses already in its
// order (InternalIPs, then ExternalIPs): the first, then the first of the
// other family; what does not parse is skipped. These are a node's
// status.hostIPs, and a host-network pod's status.podIPs.
func NodeHostIPs(addrs []string) []string {
	var out []string
	var first netip.Addr
	for _, s := range addrs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			// kubelet's ParseIPSloppy takes IPv4 with leading zeros.
			a, _ = netip.AddrFromSlice(netutils.ParseIPSloppy(s))
		} else if a.Zone() != "" {
			continue
		}
		a = a.Unmap()
		switch {
		case !a.IsValid():
		case len(out) == 0:
			first = a
			out = append(out, a.String())
		case a.Is6() != first.Is6():
			return append(out, a.String())
		}
	}
	return out
}

// subscript reads `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// resourceFieldValue is kubelet v1.37's containerResourceRuntimeValue
// after defaultPodLimitsForDownwardAPI: the container's request or limit,
// rounded up to the divisor. A CPU, memory or ephemeral-storage limit the
// container does not set (or sets to zero) reads as the pod-level limit
// for CPU and memory when the pod sets one, else as the node's
// allocatable; when that is unknown (Node.Allocatable lacks it) the value
// kubelet would give cannot be known and the env var is refused
// (ErrUnknownNodeFact) rather than read as 0. With containerName the named
// container is looked up among app containers, then init containers, and
// only app containers get the defaulted limits, as in kubelet.
func resourceFieldValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, node Node) (string, error) {
	target, defaulted := c, true
	if ref.ContainerName != "" {
		target, defaulted = findContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	var q resource.Quantity
	switch kind {
	case "limits":
		v, err := limitForDownwardAPI(pod, target, corev1.ResourceName(name), defaulted, node)
		if err != nil {
			return "", err
		}
		q = v
	case "requests":
		q = target.Resources.Requests[corev1.ResourceName(name)]
	default:
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	switch {
	case name == "cpu":
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case name == "memory", name == "ephemeral-storage", strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

// findContainer is kubelet's findContainerInPod: app containers first,
// then init containers; app reports whether it is an app container.
func findContainer(pod *corev1.Pod, name string) (c *corev1.Container, app bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], false
		}
	}
	return nil, false
}

// limitForDownwardAPI is the limit kubelet's MergeContainerResourceLimits
// leaves on c for name: its own when set and not zero; for CPU, memory and
// ephemeral storage of a defaulted container, the pod-level limit (CPU and
// memory) or the node's allocatable.
func limitForDownwardAPI(pod *corev1.Pod, c *corev1.Container, name corev1.ResourceName, defaulted bool, node Node) (resource.Quantity, error) {
	own, ok := c.Resources.Limits[name]
	if ok && !own.IsZero() || !defaulted {
		return own, nil
	}
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	default:
		return own, nil
	}
	if resourcehelper.IsPodLevelLimitsSet(pod) && resourcehelper.IsSupportedPodLevelResource(name) {
		if v, ok := pod.Spec.Resources.Limits[name]; ok && !v.IsZero() {
			return v, nil
		}
	}
	if v, ok := node.Allocatable[name]; ok {
		return v, nil
	}
	return own, unknownNodeFact("container %q env resourceFieldRef limits.%s: the container sets no %s limit and the node's allocatable %s is unknown (Node.Allocatable)", c.Name, name, name, name)
}
