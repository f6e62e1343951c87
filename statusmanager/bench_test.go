package statusmanager

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/apistatus"
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

// BenchmarkReconcileSteady: one sync period's reconcile (Sync(ctx, true))
// of 500 pods whose statuses the API server already holds: no call to it,
// and no comparison repeated for a pod whose API object and status did
// not change since the last pass.
func BenchmarkReconcileSteady(b *testing.B) {
	c := fake.NewClient()
	m, _ := newManager(c)
	ctx := context.Background()
	for i := 0; i < 500; i++ {
		pod := testPod()
		pod.Name, pod.UID = fmt.Sprintf("pod%03d", i), types.UID(fmt.Sprintf("uid%03d", i))
		for _, n := range []string{"app", "web", "sidecar"} {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, Image: "busybox:1.35"})
		}
		c.Put(pod)
		st := benchStatus()
		apistatus.Normalize(pod, &st) // as podworker hands it over
		m.OnSync(pod.UID, state(pod, st, true))
	}
	if err := m.Sync(ctx, true); err != nil {
		b.Fatal(err)
	}
	if err := m.Sync(ctx, true); err != nil {
		b.Fatal(err)
	}
	c.ClearCalls()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Sync(ctx, true); err != nil {
			b.Fatal(err)
		}
	}
	if calls := c.Verbs(); len(calls) > 0 {
		b.Fatalf("%d API calls for pods whose status is written", len(calls))
	}
}
