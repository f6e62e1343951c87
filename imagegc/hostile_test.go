package imagegc

import (
	"math"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestFreeSpaceHugeSizes: a runtime reporting an image size of 2^63 or
// more (uint64 in CRI) counts as math.MaxInt64 bytes, and the bytes freed
// saturate: the pass stops once enough is freed. Before, 1<<63 wrapped to
// a negative size and the pass removed every unused image ("freed -45
// bytes").
func TestFreeSpaceHugeSizes(t *testing.T) {
	for _, size := range []uint64{1 << 63, 1<<64 - 1} {
		// Detected in order: a small image, the huge one, another small
		// one; none in use, so they are removed in that order.
		rt := newFakeRuntime(makeImage(0, 1024))
		m, _ := newManager(t, rt)
		detectAt(t, m, t0)
		rt.setImages(makeImage(0, 1024), makeImage(1, size))
		detectAt(t, m, t0.Add(time.Second))
		rt.setImages(makeImage(0, 1024), makeImage(1, size), makeImage(2, 1024))
		l := detectAt(t, m, t0.Add(2*time.Second))
		p := &Pass{}
		freed, err := m.freeSpace(ctxFor(t), 4096, t0.Add(time.Minute), l.candidates, p)
		if err != nil {
			t.Fatal(err)
		}
		if freed != math.MaxInt64 {
			t.Errorf("size %d: freed %d bytes, want %d", size, freed, int64(math.MaxInt64))
		}
		if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(2)}) {
			t.Errorf("size %d: left %v, want only image-2", size, got)
		}
		for _, r := range p.Removed {
			if r.Size < 0 {
				t.Errorf("size %d: removed %s of %d bytes", size, r.ID, r.Size)
			}
		}
	}
}

// TestGarbageCollectHugeSize: the same through a whole pass over the
// threshold: one huge image frees enough, the other unused image stays.
func TestGarbageCollectHugeSize(t *testing.T) {
	for _, size := range []uint64{1 << 63, 1<<64 - 1} {
		rt := newFakeRuntime(makeImage(0, size))
		m, clk := newManager(t, rt, WithPolicy(Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}),
			WithFilesystem(&fakeFS{capacity: 1000, available: 50}))
		detectAt(t, m, t0)
		rt.setImages(makeImage(0, size), &runtimeapi.Image{Id: imageID(1), Size: 100})
		detectAt(t, m, t0.Add(time.Second))
		clk.Step(time.Minute)
		if err := m.GarbageCollect(ctxFor(t)); err != nil {
			t.Errorf("size %d: GarbageCollect = %v", size, err)
		}
		if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(1)}) {
			t.Errorf("size %d: left %v, want only image-1", size, got)
		}
	}
}
