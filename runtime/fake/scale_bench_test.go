package fake_test

import (
	"context"
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// scaleNode is a fake runtime with n pods of one running container each,
// labelled as kubelet labels them; uids are the pods' UIDs, sandboxes
// their sandbox IDs.
func scaleNode(tb testing.TB, n int, opts ...fake.Option) (rt *fake.Runtime, uids, sandboxes []string) {
	tb.Helper()
	rt = fake.New(append([]fake.Option{fake.WithImages("busybox:1.36")}, opts...)...)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		uid := fmt.Sprintf("uid-%05d", i)
		labels := map[string]string{"io.kubernetes.pod.uid": uid, "io.kubernetes.pod.name": fmt.Sprintf("p%05d", i), "io.kubernetes.pod.namespace": "scale"}
		sbc := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%05d", i), Namespace: "scale", Uid: uid}, Labels: labels}
		sb, err := rt.RunPodSandbox(ctx, sbc, "")
		if err != nil {
			tb.Fatal(err)
		}
		cl := map[string]string{"io.kubernetes.container.name": "app"}
		for k, v := range labels {
			cl[k] = v
		}
		id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Labels: cl}, sbc)
		if err != nil {
			tb.Fatal(err)
		}
		if err := rt.StartContainer(ctx, id); err != nil {
			tb.Fatal(err)
		}
		uids, sandboxes = append(uids, uid), append(sandboxes, sb)
	}
	rt.ResetCalls()
	return rt, uids, sandboxes
}

// BenchmarkListByPod: the two lists a node agent makes for one pod at
// each sync (ListPodSandbox and ListContainers filtered by the pod's UID
// label), on a node of N pods. Flat in N: the fake indexes by that label.
func BenchmarkListByPod(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			rt, uids, _ := scaleNode(b, n, fake.WithCallLog(false))
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sel := map[string]string{"io.kubernetes.pod.uid": uids[i%n]}
				i++
				sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
				if err != nil || len(sbs) != 1 {
					b.Fatal(len(sbs), err)
				}
				cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
				if err != nil || len(cs) != 1 {
					b.Fatal(len(cs), err)
				}
			}
		})
	}
}

// BenchmarkListPodSandboxStats: one stats list of a node of N pods (what
// eviction's and the summary's CRI source asks), per pod: flat in N.
func BenchmarkListPodSandboxStats(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			rt, _, _ := scaleNode(b, n, fake.WithCallLog(false))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				st, err := rt.ListPodSandboxStats(ctx, nil)
				if err != nil || len(st) != n {
					b.Fatal(len(st), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
		})
	}
}

// BenchmarkRemovePodSandbox: removing one stopped pod's sandbox (and its
// container) on a node of N pods.
func BenchmarkRemovePodSandbox(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			rt, _, sandboxes := scaleNode(b, n+b.N, fake.WithCallLog(false))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := rt.StopPodSandbox(ctx, sandboxes[i]); err != nil {
					b.Fatal(err)
				}
				if err := rt.RemovePodSandbox(ctx, sandboxes[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
