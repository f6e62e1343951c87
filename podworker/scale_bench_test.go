package podworker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// scalePod is a pod of one long-running container.
func scalePod(i int) *corev1.Pod {
	grace := int64(5)
	name := fmt.Sprintf("scale%05d", i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", ImagePullPolicy: corev1.PullIfNotPresent}}},
	}
}

// scaleNode is Workers holding n running pods on runtime/fake (calls
// counted, not kept), with no loop of their own running: a benchmark
// calls Relist or CollectGarbage itself.
func scaleNode(b *testing.B, n int) (*podworker.Workers, *fake.Runtime) {
	rt := fake.New(fake.WithImages("busybox:1.36"), fake.WithCallLog(false))
	ims := images.NewManager(rt)
	b.Cleanup(func() { ims.Close() })
	root := b.TempDir()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	w := podworker.New(syncer, podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0),
		podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithContainerEvents(false))
	b.Cleanup(func() { w.Close() })
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if err := w.Upsert(scalePod(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if st, ok := w.Status(scalePod(i).UID); !ok || st.APIStatus.Phase != corev1.PodRunning {
			b.Fatalf("pod %d: %v %v %v", i, ok, st.APIStatus.Phase, st.Err)
		}
	}
	w.SourcesReady()
	if err := w.Relist(ctx); err != nil {
		b.Fatal(err)
	}
	rt.ResetCalls()
	return w, rt
}

// BenchmarkRelist: one node-wide relist (kubelet's PLEG relist: two CRI
// lists, no status call when nothing changed) of N running pods; ns/pod
// and B/pod must not grow with N.
func BenchmarkRelist(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w, rt := scaleNode(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Relist(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
			calls := 0
			for _, c := range rt.CallCounts() {
				calls += c
			}
			b.ReportMetric(float64(calls)/float64(b.N), "cri-calls/relist")
		})
	}
}

// BenchmarkCollectGarbage: one garbage collection pass (every minute) of
// N running pods the Workers hold, nothing to remove; ns/pod must not
// grow with N.
func BenchmarkCollectGarbage(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w, _ := scaleNode(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.CollectGarbage(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
		})
	}
}
