package imagegc

import (
	"context"
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// BenchmarkGarbageCollectScale: one image garbage collection pass on a
// node of 1,000 and 10,000 pods' containers (using 100 of 1,000 images):
// the images in use are found in one pass over the containers, so
// ns/container must not grow with N.
func BenchmarkGarbageCollectScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			var imgs []*runtimeapi.Image
			for i := range 1000 {
				imgs = append(imgs, &runtimeapi.Image{Id: fmt.Sprintf("sha256:%064d", i), Size: 1 << 20, Pinned: i%100 == 99})
			}
			rt := newFakeRuntime(imgs...)
			rt.keep = true
			for i := range n {
				rt.containers = append(rt.containers, &runtimeapi.Container{
					Id: fmt.Sprintf("c%d", i), Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
					Image: &runtimeapi.ImageSpec{Image: "x"}, ImageId: imgs[i%100].Id,
				})
			}
			clk := testingclock.NewFakeClock(t0)
			ffs := &fakeFS{capacity: 1000 << 20, available: 0}
			m, err := New(rt, WithClock(clk), WithFilesystem(ffs), WithPolicy(Policy{HighThresholdPercent: 85, LowThresholdPercent: 70}))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for range 3 {
				_ = m.detectForBench(ctx, clk.Now())
				clk.Step(time.Minute)
			}
			clk.Step(time.Hour)
			b.ReportAllocs()
			for b.Loop() {
				ffs.asked = ffs.asked[:0]
				rt.removed = rt.removed[:0]
				if err := m.GarbageCollect(ctx); err != nil {
					b.Fatal(err)
				}
				if len(rt.removed) != 300 {
					b.Fatalf("removed %d, want 300", len(rt.removed))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/container")
		})
	}
}
