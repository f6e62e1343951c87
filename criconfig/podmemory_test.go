package criconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodMemoryLimit follows kubelet v1.37.2's ResourceConfigForPod
// (TestResourceConfigForPod): Guaranteed pods are limited to their
// limits; Burstable pods only when every init and app container declares
// a memory limit, or the pod does; BestEffort pods never.
func TestPodMemoryLimit(t *testing.T) {
	always := ptr(corev1.ContainerRestartPolicyAlways)
	tests := []struct {
		name string
		pod  func(*corev1.Pod)
		want int64 // -1: none
	}{
		{"best effort", nil, -1},
		{"guaranteed", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = res(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))
		}, 1 << 30},
		{"burstable with a memory limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), rl("memory", "2Gi"))
		}, 2 << 30},
		{"burstable without a memory limit", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), nil) }, -1},
		{"an init container without a limit after a sidecar with one", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = res(nil, rl("memory", "1Gi"))
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: always, Resources: res(nil, rl("memory", "1Gi"))}, {Name: "i"}}
		}, -1},
		{"sidecar and init container with limits: the larger of apps plus sidecars and the init peak", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = res(nil, rl("memory", "1Gi"))
			p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: always, Resources: res(nil, rl("memory", "1Gi"))},
				{Name: "i", Resources: res(nil, rl("memory", "3Gi"))}}
		}, 4 << 30},
		{"pod-level memory limit", func(p *corev1.Pod) {
			p.Spec.Resources = ptr(res(rl("memory", "1Gi"), rl("memory", "3Gi")))
			p.Spec.Containers[0].Resources = res(rl("memory", "1Gi"), nil)
		}, 3 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PodMemoryLimit(testPod(tt.pod))
			if !ok {
				got = -1
			}
			if got != tt.want {
				t.Fatalf("PodMemoryLimit = %d, want %d", got, tt.want)
			}
		})
	}
}
