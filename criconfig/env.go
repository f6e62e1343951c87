package criconfig

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	case "status.hostIP":
		if len(node.HostIPs) == 0 {
			return "", nil
		}
		return node.HostIPs[0], nil
	case "status.hostIPs":
		return strings.Join(node.HostIPs, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// subscript reads `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// resourceFieldValue is kubelet's containerResourceRuntimeValue: the
// named container's request or limit, a missing limit read as the node's
// allocatable, rounded up to the divisor.
func resourceFieldValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, node Node) (string, error) {
	target := c
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		target = nil
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if list[i].Name == ref.ContainerName {
					target = &list[i]
				}
			}
		}
		if target == nil {
			return "", fmt.Errorf("container %q not found in pod %s", ref.ContainerName, podDesc(pod))
		}
	}
	limits := corev1.ResourceList{}
	for k, v := range target.Resources.Limits {
		limits[k] = v
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if _, ok := limits[name]; !ok {
			if v, ok := node.Allocatable[name]; ok {
				limits[name] = v
			}
		}
	}
	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || kind != "limits" && kind != "requests" {
		return "", fmt.Errorf("unsupported container resource: %v", ref.Resource)
	}
	list := limits
	if kind == "requests" {
		list = target.Resources.Requests
	}
	q := list[corev1.ResourceName(name)]
	switch {
	case name == "cpu":
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case name == "memory", name == "ephemeral-storage", strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource: %v", ref.Resource)
}
