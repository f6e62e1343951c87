package imagegc

import (
	"context"
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// BenchmarkChoose1000Images is one GarbageCollect pass over 1,000 images
// (100 in use by 200 containers, 10 pinned, history from 3 earlier passes)
// that chooses 300 to remove. The runtime keeps them, so each pass sees
// the same node (the removed ones as newly seen).
func BenchmarkChoose1000Images(b *testing.B) {
	var imgs []*runtimeapi.Image
	for i := range 1000 {
		imgs = append(imgs, &runtimeapi.Image{Id: fmt.Sprintf("sha256:%064d", i), Size: 1 << 20, Pinned: i%100 == 99})
	}
	rt := newFakeRuntime(imgs...)
	rt.keep = true
	for i := range 200 {
		rt.containers = append(rt.containers, &runtimeapi.Container{
			Id: fmt.Sprintf("c%d", i), Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image: &runtimeapi.ImageSpec{Image: "x"}, ImageId: imgs[i%100].Id,
		})
	}
	clk := testingclock.NewFakeClock(t0)
	// 1000 MiB, full: 30% (low threshold 70) is 300 images' worth.
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
	b.ResetTimer()
	for range b.N {
		ffs.asked = ffs.asked[:0]
		rt.removed = rt.removed[:0]
		if err := m.GarbageCollect(ctx); err != nil {
			b.Fatal(err)
		}
		if len(rt.removed) != 300 {
			b.Fatalf("removed %d, want 300", len(rt.removed))
		}
	}
}

func (m *Manager) detectForBench(ctx context.Context, at time.Time) error {
	_, err := m.detect(ctx, at)
	return err
}
