package podsync_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// keepContainers is the fake whose RemoveContainer removes nothing, so
// that every garbage collection pass finds the same instances to remove.
type keepContainers struct {
	*fake.Runtime
	removed *atomic.Int64
}

func (k keepContainers) RemoveContainer(context.Context, string) error {
	k.removed.Add(1)
	return nil
}

// BenchmarkGarbageCollectSuperseded: one garbage collection pass of a
// node of N pods whose app container never started and was created
// again (a start that keeps failing): each pod's older instance is
// removed. ns/pod must not grow with N (it did: each such instance was
// compared with every container of the node).
func BenchmarkGarbageCollectSuperseded(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			rt := fake.New(fake.WithImages("busybox:1.36"), fake.WithCallLog(false))
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			for i := 0; i < n; i++ {
				uid := fmt.Sprintf("uid-%05d", i)
				labels := map[string]string{podsync.LabelPodUID: uid, podsync.LabelPodName: fmt.Sprintf("p%05d", i), podsync.LabelPodNamespace: "scale"}
				sb := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%05d", i), Namespace: "scale", Uid: uid}, Labels: labels},
					runtimeapi.PodSandboxState_SANDBOX_READY, t0)
				cl := map[string]string{podsync.LabelContainerName: "app"}
				for k, v := range labels {
					cl[k] = v
				}
				for j := 0; j < 2; j++ {
					cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: uint32(j)},
						Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Labels: cl}
					if _, err := rt.SeedContainer(sb, cfg, fake.Seeded{CreatedAt: t0.Add(time.Duration(j) * time.Second)}); err != nil {
						b.Fatal(err)
					}
				}
			}
			ims := images.NewManager(rt)
			b.Cleanup(func() { ims.Close() })
			root := b.TempDir()
			var removed atomic.Int64
			s := podsync.NewSyncer(keepContainers{rt, &removed}, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := s.GarbageCollect(ctx, podsync.DefaultGCPolicy, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
			if got := removed.Load(); got != int64(n*b.N) {
				b.Fatalf("%d RemoveContainer calls, want %d", got, n*b.N)
			}
		})
	}
}

// BenchmarkPodStatus: one pod's status read (each sync reads it) on a
// node of N running pods whose instances the cache already knows: the
// two lists filtered by the pod's UID and the cache's check of that
// pod's entries. Must not grow with N (it did: the check scanned every
// cached instance of the node).
func BenchmarkPodStatus(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			rt := fake.New(fake.WithImages("busybox:1.36"), fake.WithCallLog(false))
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var pods []*corev1.Pod
			for i := 0; i < n; i++ {
				uid := fmt.Sprintf("uid-%05d", i)
				name := fmt.Sprintf("p%05d", i)
				labels := map[string]string{podsync.LabelPodUID: uid, podsync.LabelPodName: name, podsync.LabelPodNamespace: "scale"}
				sb := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "scale", Uid: uid}, Labels: labels},
					runtimeapi.PodSandboxState_SANDBOX_READY, t0)
				cl := map[string]string{podsync.LabelContainerName: "app"}
				for k, v := range labels {
					cl[k] = v
				}
				cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Labels: cl}
				if _, err := rt.SeedContainer(sb, cfg, fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: t0}); err != nil {
					b.Fatal(err)
				}
				pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale", UID: types.UID(uid)}})
			}
			ims := images.NewManager(rt)
			b.Cleanup(func() { ims.Close() })
			root := b.TempDir()
			s := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
			ctx := context.Background()
			if _, _, err := s.StatusCache().Relist(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				st, err := s.Status(ctx, pods[i%n])
				i++
				if err != nil || len(st.ContainerStatuses) != 1 {
					b.Fatal(err)
				}
			}
		})
	}
}
