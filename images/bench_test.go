package images

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// pullAll pulls 64 distinct images at once and returns the wall time.
func pullAll(b *testing.B, opts ...Option) time.Duration {
	rt := fake.New()
	rt.SetLatency("PullImage", 50*time.Millisecond)
	m := NewManager(rt, opts...)
	defer m.Close()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ensure(m, fmt.Sprintf("image%d", i), "p"); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkPullers: 64 images of 50 ms each; x-ideal is the wall time over
// the ideal (8 × 50 ms with 8 in parallel, 64 × 50 ms serially).
func BenchmarkPullers(b *testing.B) {
	for _, bc := range []struct {
		name  string
		opt   Option
		ideal time.Duration
	}{
		{"parallel-8", WithParallelPulls(8), 8 * 50 * time.Millisecond},
		{"serial", WithSerialPulls(), 64 * 50 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += pullAll(b, bc.opt)
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(bc.ideal), "x-ideal")
		})
	}
}

// BenchmarkSharedPull: 100 concurrent callers for one image; pulls/op is
// the runtime PullImage calls per 100 callers (kubelet: 100).
func BenchmarkSharedPull(b *testing.B) {
	var pulls int
	for b.Loop() {
		rt := fake.New()
		rt.SetLatency("PullImage", 10*time.Millisecond)
		m := NewManager(rt, WithParallelPulls(0))
		var wg sync.WaitGroup
		refs := make([]string, 100)
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				refs[i], _ = ensure(m, "busybox", fmt.Sprintf("pod%d", i))
			}()
		}
		wg.Wait()
		m.Close()
		for _, r := range refs {
			if r != refs[0] || r == "" {
				b.Fatal("callers got different refs")
			}
		}
		pulls += rt.CallCount("PullImage")
	}
	b.ReportMetric(float64(pulls)/float64(b.N), "pulls/op")
}

// BenchmarkEnsurePresent: IfNotPresent for an image that is present.
func BenchmarkEnsurePresent(b *testing.B) {
	rt := fake.New(fake.WithImages("busybox:1.35"))
	m := NewManager(rt)
	defer m.Close()
	pod, c := testPod("busybox:1.35", corev1.PullIfNotPresent)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rt.ResetCalls()
		if _, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
