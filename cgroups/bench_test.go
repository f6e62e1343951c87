package cgroups

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

func benchPod() *corev1.Pod {
	p := podWith("bench", rr(req("250m", "128Mi"), req("1", "256Mi")), rr(req("100m", "64Mi"), req("500m", "128Mi")))
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: rr(req("1", "1Gi"), req("1", "1Gi"))}}
	p.Spec.Overhead = req("10m", "8Mi")
	return p
}

func BenchmarkResourceConfigForPod(b *testing.B) {
	pod := benchPod()
	b.ReportAllocs()
	for b.Loop() {
		_ = ResourceConfigForPod(pod, PodOptions{})
	}
}

func BenchmarkBurstableCPUShares(b *testing.B) {
	pods := make([]*corev1.Pod, 110)
	for i := range pods {
		pods[i] = benchPod()
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = BurstableCPUShares(pods)
	}
}

// BenchmarkEnsureRemovePod makes and removes a pod cgroup on a v1 MemFS.
func BenchmarkEnsureRemovePod(b *testing.B) {
	mfs := NewMemFS(false)
	m, err := NewManager(mfs.Tree(), criconfig.Node{}, WithNodeAllocatable(NodeAllocatable{Capacity: req("4", "8Gi")}), WithKill(mfs.Kill))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := m.EnsureQoS(ctx); err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pod.UID = types.UID(fmt.Sprint("u", i))
		i++
		if err := m.EnsurePod(ctx, pod); err != nil {
			b.Fatal(err)
		}
		if err := m.RemovePod(ctx, pod); err != nil {
			b.Fatal(err)
		}
	}
}
