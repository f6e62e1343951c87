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

// scaleManager is a manager holding n pods whose statuses the API server
// already has (three containers each, as BenchmarkReconcileSteady's).
func scaleManager(b *testing.B, n int) (*Manager, *fake.Client, []*corev1.Pod) {
	c := fake.NewClient()
	m, _ := newManager(c)
	ctx := context.Background()
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		pod := testPod()
		pod.Name, pod.UID = fmt.Sprintf("pod%05d", i), types.UID(fmt.Sprintf("uid%05d", i))
		for _, name := range []string{"app", "web", "sidecar"} {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name, Image: "busybox:1.35"})
		}
		c.Put(pod)
		st := benchStatus()
		apistatus.Normalize(pod, &st)
		m.OnSync(pod.UID, state(pod, st, true))
		pods = append(pods, pod)
	}
	for range 2 {
		if err := m.Sync(ctx, true); err != nil {
			b.Fatal(err)
		}
	}
	c.ClearCalls()
	return m, c, pods
}

// BenchmarkReconcile: one periodic reconcile (every 10 s) of N pods whose
// statuses the API server already holds; ns/pod must not grow with N.
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			m, c, _ := scaleManager(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Sync(ctx, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
			if v := c.Verbs(); len(v) > 0 {
				b.Fatalf("%d API calls for written statuses", len(v))
			}
		})
	}
}

// BenchmarkWakeOneStatus: one pod's new status among N (a readiness
// change, a pod starting) and the batch it wakes: a read and a patch of
// that pod. Must not grow with N: a wake-up looks at the pods with
// something to write, not at every pod.
func BenchmarkWakeOneStatus(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			m, c, pods := scaleManager(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				pod := pods[i%n]
				i++
				st := benchStatus()
				st.Message = fmt.Sprint(i)
				apistatus.Normalize(pod, &st)
				m.OnSync(pod.UID, state(pod, st, true))
				if err := m.Sync(ctx, false); err != nil {
					b.Fatal(err)
				}
				c.ClearCalls()
			}
		})
	}
}
