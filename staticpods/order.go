package staticpods

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// SystemCriticalPriority is the scheduling API's SystemCriticalPriority:
// pods at or above it are critical.
const SystemCriticalPriority int32 = 2000000000

// IsStaticPod is kubelet's kubetypes.IsStaticPod: the pod came from a
// source other than the API server (its config.source annotation).
func IsStaticPod(pod *corev1.Pod) bool {
	s, ok := pod.Annotations[ConfigSourceAnnotation]
	return ok && s != SourceAPIServer
}

// IsMirrorPod is kubelet's kubetypes.IsMirrorPod: the pod carries the
// config.mirror annotation.
func IsMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotation]
	return ok
}

// IsCriticalPod is kubelet's kubetypes.IsCriticalPod: a static pod, a
// mirror pod, or a priority of at least SystemCriticalPriority.
func IsCriticalPod(pod *corev1.Pod) bool {
	return IsStaticPod(pod) || IsMirrorPod(pod) ||
		(pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority)
}

// SortForAdmission orders pods that arrive together as kubelet's
// HandlePodAdditions admits them: by creation time, oldest first. Static
// pods have no creation time, so they come before every API pod.
func SortForAdmission(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
}
