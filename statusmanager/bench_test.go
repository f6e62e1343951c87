package statusmanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/statusmanager/fake"
)

func benchStatus() corev1.PodStatus {
	s := runningStatus()
	for _, n := range []string{"app", "web", "sidecar"} {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{Name: n, Ready: true, Image: "busybox:1.35",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return s
}

// BenchmarkOnSyncUnchanged: what every sync of a steady pod costs its
// goroutine.
func BenchmarkOnSyncUnchanged(b *testing.B) {
	m, _ := newManager(fake.NewClient())
	pod := testPod()
	st := state(pod, benchStatus(), true)
	m.OnSync(pod.UID, st)
	b.ReportAllocs()
	for b.Loop() {
		m.OnSync(pod.UID, st)
	}
}

// BenchmarkStatusPatch: one readiness change of a three-container pod.
func BenchmarkStatusPatch(b *testing.B) {
	old, next := benchStatus(), benchStatus()
	next.Conditions[0].Status = corev1.ConditionFalse
	next.ContainerStatuses[1].Ready = false
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := StatusPatch("uid", old, next); err != nil {
			b.Fatal(err)
		}
	}
}
