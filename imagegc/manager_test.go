package imagegc

import (
	"context"
	"errors"
	"io/fs"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images/pullrecords"
	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	_ Runtime = (*runtime.Client)(nil)
	_ Runtime = (*fake.Runtime)(nil)
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newManager(t *testing.T, rt Runtime, opts ...Option) (*Manager, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	m, err := New(rt, append([]Option{WithClock(clk), WithPolicy(Policy{})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

func ctxFor(t *testing.T) context.Context {
	return logr.NewContext(context.Background(), testr.New(t))
}

// detectAt is kubelet's detectImages(ctx, at).
func detectAt(t *testing.T, m *Manager, at time.Time) *listing {
	t.Helper()
	l, err := m.detect(ctxFor(t), at)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func recordOf(t *testing.T, m *Manager, id string) record {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.seen[id]
	if !ok {
		t.Fatalf("no record of %s", id)
	}
	return *r
}

// freeSpaceAt is kubelet's getImagesAndFreeSpace: detect at `at`, then free
// toFree bytes; it checks the bytes freed and the images left.
func freeSpaceAt(t *testing.T, m *Manager, rt *fakeRuntime, toFree, wantFreed int64, wantLeft int, at time.Time) {
	t.Helper()
	l := detectAt(t, m, at)
	freed, err := m.freeSpace(ctxFor(t), toFree, at, l.candidates, &Pass{})
	if err != nil {
		t.Fatal(err)
	}
	if freed != wantFreed {
		t.Errorf("freed %d bytes, want %d", freed, wantFreed)
	}
	if got := len(rt.imageIDs()); got != wantLeft {
		t.Errorf("%d images left (%v), want %d", got, rt.imageIDs(), wantLeft)
	}
}

func TestDetectImages(t *testing.T) {
	t.Run("initial", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 2048))
		rt.use(1, 2)
		// A container without an image name still uses its image ID.
		rt.containers[0].Image = &runtimeapi.ImageSpec{}
		m, _ := newManager(t, rt)
		detectAt(t, m, t0)
		if len(m.seen) != 3 {
			t.Fatalf("%d records, want 3", len(m.seen))
		}
		want := map[string]record{
			imageID(0): {firstDetected: t0, size: 1024},
			imageID(1): {firstDetected: t0, lastUsed: t0, size: 2048},
			imageID(2): {firstDetected: t0, lastUsed: t0, size: 2048},
		}
		for id, w := range want {
			if diff := cmp.Diff(w, recordOf(t, m, id), cmp.AllowUnexported(record{})); diff != "" {
				t.Errorf("%s (-want +got):\n%s", id, diff)
			}
		}
	})
	t.Run("new image", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
		rt.use(1)
		m, _ := newManager(t, rt)
		detectAt(t, m, t0)
		rt.setImages(makeImage(0, 1024), makeImage(1, 1024), makeImage(2, 1024))
		t1 := t0.Add(time.Second)
		detectAt(t, m, t1)
		if r := recordOf(t, m, imageID(0)); !r.firstDetected.Equal(t0) || !r.lastUsed.IsZero() {
			t.Errorf("image-0: %+v", r)
		}
		if r := recordOf(t, m, imageID(1)); !r.firstDetected.Equal(t0) || !r.lastUsed.Equal(t1) || r.size != 1024 {
			t.Errorf("image-1: %+v", r)
		}
		if r := recordOf(t, m, imageID(2)); !r.firstDetected.Equal(t1) || !r.lastUsed.IsZero() {
			t.Errorf("image-2: %+v", r)
		}
	})
	t.Run("container stopped", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
		rt.use(1)
		m, _ := newManager(t, rt)
		detectAt(t, m, t0)
		rt.setContainers()
		detectAt(t, m, t0.Add(time.Minute))
		if r := recordOf(t, m, imageID(1)); !r.lastUsed.Equal(t0) || !r.firstDetected.Equal(t0) {
			t.Errorf("image-1 after its container went: %+v", r)
		}
	})
	t.Run("removed images", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
		rt.use(1)
		m, _ := newManager(t, rt)
		detectAt(t, m, t0)
		rt.setImages()
		detectAt(t, m, t0.Add(time.Second))
		if len(m.seen) != 0 {
			t.Errorf("%d records left, want 0", len(m.seen))
		}
	})
	t.Run("container status gone is not an error", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
		rt.use(1)
		rt.gone[rt.containers[0].Id] = true
		m, _ := newManager(t, rt)
		l := detectAt(t, m, t0)
		if len(l.candidates) != 1 || l.candidates[0].id != imageID(0) {
			t.Errorf("candidates %+v, want image-0 only", l.candidates)
		}
	})
	t.Run("container status error fails the pass", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024))
		rt.use(0)
		m, _ := newManager(t, &statusErr{rt})
		_, err := m.detect(ctxFor(t), t0)
		if !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("err %v, want the runtime's Unavailable", err)
		}
	})
}

type statusErr struct{ *fakeRuntime }

func (s *statusErr) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	return nil, runtime.Classify(status.Error(codes.Unavailable, "runtime down"))
}

// TestFreeSpace ports kubelet's freeSpace cases (getImagesAndFreeSpace).
func TestFreeSpace(t *testing.T) {
	pinned := func(id string) *runtimeapi.Image { return &runtimeapi.Image{Id: id, Size: 1024, Pinned: true} }
	plain := func(id string) *runtimeapi.Image { return &runtimeapi.Image{Id: id, Size: 1024} }
	for _, tc := range []struct {
		name      string
		images    []*runtimeapi.Image
		use       []int
		toFree    int64
		wantFreed int64
		wantLeft  int
	}{
		{name: "pinned image kept", images: []*runtimeapi.Image{pinned("1"), plain("2")}, toFree: 4096, wantFreed: 1024, wantLeft: 1},
		{name: "unpinned images removed", images: []*runtimeapi.Image{plain("1"), plain("2")}, toFree: 2048, wantFreed: 2048},
		{name: "all pinned", images: []*runtimeapi.Image{pinned("1"), pinned("2")}, toFree: 2048, wantLeft: 2},
		{name: "images in use ignored", images: []*runtimeapi.Image{makeImage(0, 1024), makeImage(1, 2048)}, use: []int{1}, toFree: 2048, wantFreed: 1024, wantLeft: 1},
		{name: "stops once enough is freed", images: []*runtimeapi.Image{makeImage(0, 1024), makeImage(1, 1024), makeImage(2, 1024)}, toFree: 1500, wantFreed: 2048, wantLeft: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime(tc.images...)
			rt.use(tc.use...)
			m, _ := newManager(t, rt)
			freeSpaceAt(t, m, rt, tc.toFree, tc.wantFreed, tc.wantLeft, t0)
		})
	}
}

func TestFreeSpaceLeastRecentlyUsedFirst(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
	rt.use(0, 1)
	m, _ := newManager(t, rt)
	detectAt(t, m, t0)
	rt.setContainers(1) // 1 is used later than 0
	detectAt(t, m, t0.Add(time.Second))
	rt.setContainers()
	detectAt(t, m, t0.Add(2*time.Second))
	freeSpaceAt(t, m, rt, 1024, 1024, 1, t0.Add(time.Minute))
	if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(1)}) {
		t.Errorf("left %v, want image-1", got)
	}
}

func TestFreeSpaceTiesBrokenByDetectedTime(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1024))
	rt.use(0)
	m, _ := newManager(t, rt)
	detectAt(t, m, t0)
	rt.setImages(makeImage(0, 1024), makeImage(1, 2048))
	rt.use(1)
	detectAt(t, m, t0.Add(time.Second)) // both used now; 1 detected later
	rt.setContainers()
	detectAt(t, m, t0.Add(2*time.Second))
	freeSpaceAt(t, m, rt, 1024, 1024, 1, t0.Add(3*time.Second))
	if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(1)}) {
		t.Errorf("left %v, want image-1", got)
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	t.Run("pinned sandbox image kept", func(t *testing.T) {
		rt := newFakeRuntime(&runtimeapi.Image{Id: "registry.k8s.io/pause-amd64:latest", Size: 1024, Pinned: true})
		m, _ := newManager(t, rt)
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if len(rt.imageIDs()) != 1 {
			t.Errorf("images %v, want the pinned one", rt.imageIDs())
		}
	})
	t.Run("same ID listed pinned then not: the last listing counts", func(t *testing.T) {
		rt := newFakeRuntime(&runtimeapi.Image{Id: "pause", Size: 1024, Pinned: true}, &runtimeapi.Image{Id: "pause", Size: 1024})
		m, _ := newManager(t, rt)
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if len(rt.imageIDs()) != 1 {
			t.Errorf("images %v, want one left", rt.imageIDs())
		}
	})
	t.Run("all unused removed", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 2048))
		rt.use(2)
		m, _ := newManager(t, rt)
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(2)}) {
			t.Errorf("left %v, want image-2", got)
		}
	})
	t.Run("minimum age", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 2048))
		rt.use(2)
		m, clk := newManager(t, rt, WithPolicy(Policy{MinAge: 3 * time.Second}))
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if n := len(rt.imageIDs()); n != 3 {
			t.Fatalf("%d images left before the minimum age, want 3", n)
		}
		clk.Step(3 * time.Second)
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(2)}) {
			t.Errorf("left %v, want image-2", got)
		}
	})
	t.Run("image volume in use", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
		rt.use(1)
		rt.mounts[rt.containers[0].Id] = []string{imageID(0)}
		m, _ := newManager(t, rt)
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if n := len(rt.imageIDs()); n != 2 {
			t.Errorf("left %v, want both (one mounted as a volume)", rt.imageIDs())
		}
	})
	t.Run("sandbox image named by tag kept", func(t *testing.T) {
		rt := newFakeRuntime(&runtimeapi.Image{Id: "sha256:p", RepoTags: []string{"registry.k8s.io/pause:3.10"}, Size: 1},
			&runtimeapi.Image{Id: "sha256:b", RepoTags: []string{"docker.io/library/busybox:latest"}, Size: 1},
			&runtimeapi.Image{Id: "sha256:c", RepoTags: []string{"docker.io/library/alpine:3"}, Size: 1})
		m, _ := newManager(t, rt, WithSandboxImages("registry.k8s.io/pause:3.10", "busybox"))
		if err := m.DeleteUnusedImages(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if got := rt.imageIDs(); !slices.Equal(got, []string{"sha256:p", "sha256:b"}) {
			t.Errorf("left %v, want the two sandbox images", got)
		}
	})
	t.Run("removal errors", func(t *testing.T) {
		rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 1024), makeImage(2, 1024))
		denied := status.Error(codes.FailedPrecondition, "image is in use by a container")
		rt.removeErr[imageID(0)] = denied
		rt.removeErr[imageID(1)] = denied
		m, _ := newManager(t, rt)
		err := m.DeleteUnusedImages(ctxFor(t))
		if !errors.Is(err, ErrRemoveFailed) || !errors.Is(err, denied) {
			t.Fatalf("err %v, want ErrRemoveFailed wrapping the runtime's", err)
		}
		want := "wanted to free 9223372036854775807 bytes, but freed 1024 bytes space with errors in image deletion: " +
			"rpc error: code = FailedPrecondition desc = image is in use by a container"
		if err.Error() != want {
			t.Errorf("err %q\nwant %q", err, want)
		}
		if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(0), imageID(1)}) {
			t.Errorf("left %v", got)
		}
	})
}

func TestGarbageCollect(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name                string
		policy              Policy
		images              []*runtimeapi.Image
		use                 []int
		capacity, available uint64
		mountpoint          string // "-": none reported
		fsErr, infoErr      error
		wantLeft            []string
		wantErr             error
		wantMsg             string
		wantEvents          []string
	}{
		{name: "below the high threshold", policy: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80},
			images: []*runtimeapi.Image{makeImage(0, 450)}, capacity: 1000, available: 600, wantLeft: []string{imageID(0)}},
		{name: "over the high threshold, freed enough", policy: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80},
			images: []*runtimeapi.Image{makeImage(0, 450)}, capacity: 1000, available: 50},
		{name: "at the high threshold exactly", policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80},
			images: []*runtimeapi.Image{makeImage(0, 10), makeImage(1, 60), makeImage(2, 10)}, capacity: 1000, available: 150,
			wantLeft: []string{imageID(2)}},
		{name: "not enough freed", policy: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80},
			images: []*runtimeapi.Image{makeImage(0, 500<<20)}, capacity: 10 * gib, available: 10 * gib / 20,
			wantErr: ErrInsufficientSpace,
			wantMsg: "Insufficient free disk space on the node's image filesystem (95% of 10.0 GiB used). Failed to free sufficient space by deleting unused images (freed 524288000 bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			wantEvents: []string{"Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem" +
				" (95% of 10.0 GiB used). Failed to free sufficient space by deleting unused images (freed 524288000 bytes)." +
				" Investigate disk usage, as it could be used by active images, logs, volumes, or other data."}},
		{name: "images in use are not enough", policy: DefaultPolicy(), images: []*runtimeapi.Image{makeImage(0, 100)}, use: []int{0},
			capacity: 1000, available: 0, wantLeft: []string{imageID(0)}, wantErr: ErrInsufficientSpace,
			wantEvents: []string{"Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem (100% of 1000 B used). Failed to free sufficient space by deleting unused images (freed 0 bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data."}},
		{name: "stats failure", policy: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80},
			images: []*runtimeapi.Image{makeImage(0, 1)}, fsErr: errBoom, wantLeft: []string{imageID(0)}, wantErr: errBoom},
		{name: "runtime reports no image filesystem", policy: DefaultPolicy(), mountpoint: "-", wantErr: ErrNoImageFs},
		{name: "ImageFsInfo fails", policy: DefaultPolicy(), infoErr: runtime.Classify(status.Error(codes.Unavailable, "down")), wantErr: runtime.ErrUnavailable},
		{name: "capacity 0", policy: DefaultPolicy(), capacity: 0, wantErr: ErrInvalidCapacity,
			wantEvents: []string{"Warning InvalidDiskCapacity invalid capacity 0 on image filesystem"}},
		{name: "mount point unknown on the node", policy: DefaultPolicy(), capacity: 100, fsErr: &fs.PathError{Op: "statfs", Path: "/images", Err: syscall.ENOENT}, wantErr: ErrInvalidCapacity,
			wantEvents: []string{"Warning InvalidDiskCapacity invalid capacity 0 on image filesystem"}},
		{name: "an exabyte filesystem", policy: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80},
			images: []*runtimeapi.Image{makeImage(0, 1<<60/5), makeImage(1, 1<<60/5)}, capacity: 1 << 60, available: 1 << 60 / 20,
			wantLeft: []string{imageID(1)}},
		{name: "available larger than capacity", policy: Policy{HighThresholdPercent: 1}, images: []*runtimeapi.Image{makeImage(0, 1)},
			capacity: 100, available: 200, wantLeft: []string{imageID(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime(tc.images...)
			rt.use(tc.use...)
			if tc.mountpoint != "" {
				rt.mountpoint = tc.mountpoint
			}
			rt.fsInfoErr = tc.infoErr
			ffs := &fakeFS{capacity: tc.capacity, available: tc.available, err: tc.fsErr}
			rec := &recorder{}
			var passes []Pass
			m, _ := newManager(t, rt, WithPolicy(tc.policy), WithFilesystem(ffs), WithRecorder(rec, NodeRef("node-1")),
				WithOnPass(func(p Pass) { passes = append(passes, p) }))
			err := m.GarbageCollect(ctxFor(t))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("err %q\nwant %q", err, tc.wantMsg)
			}
			if diff := cmp.Diff(tc.wantLeft, rt.imageIDs()); diff != "" {
				t.Errorf("images left (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, rec.list()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, o := range rec.objs {
				if ref := o.(*corev1.ObjectReference); ref.Kind != "Node" || ref.Name != "node-1" {
					t.Errorf("event about %+v, want node node-1", ref)
				}
			}
			if len(passes) != 1 || passes[0].Err != err || passes[0].Kind != "GarbageCollect" {
				t.Errorf("passes %+v", passes)
			}
			if len(ffs.asked) > 0 && ffs.asked[0] != "/images" {
				t.Errorf("measured %v, want the runtime's mount point", ffs.asked)
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestGarbageCollectMinimumAge(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
	rt.use(1)
	ffs := &fakeFS{capacity: 4096, available: 0}
	var removed []RemovedImage
	m, clk := newManager(t, rt, WithPolicy(Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MinAge: time.Minute}),
		WithFilesystem(ffs), WithOnPass(func(p Pass) { removed = append(removed, p.Removed...) }))
	if err := m.GarbageCollect(ctxFor(t)); !errors.Is(err, ErrInsufficientSpace) {
		t.Fatalf("err %v: one image in use, the other too young", err)
	}
	if n := len(rt.imageIDs()); n != 2 {
		t.Fatalf("%d images left, want 2", n)
	}
	clk.Step(time.Minute)
	if err := m.GarbageCollect(ctxFor(t)); err != nil {
		t.Fatalf("err %v: 1024 bytes freed of the 819 wanted", err)
	}
	if diff := cmp.Diff([]RemovedImage{{ID: imageID(0), Size: 1024, Reason: ReasonSpace}}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
}

func TestGarbageCollectMaximumAge(t *testing.T) {
	policy := Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MaxAge: time.Minute}
	rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048), makeImage(2, 10))
	rt.use(1, 2)
	ffs := &fakeFS{capacity: 1 << 20, available: 1 << 20} // no space pressure
	var removed []RemovedImage
	m, clk := newManager(t, rt, WithPolicy(policy), WithFilesystem(ffs),
		WithOnPass(func(p Pass) { removed = append(removed, p.Removed...) }))
	// The manager is not older than MaxAge yet: nothing goes for its age.
	if err := m.GarbageCollect(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	rt.setContainers(1)
	clk.Step(policy.MaxAge)
	if err := m.GarbageCollect(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Fatalf("removed %v at exactly MaxAge", removed)
	}
	// Past MaxAge: image-0 was never used, image-2 last used MaxAge+1 ago.
	clk.Step(1)
	if err := m.GarbageCollect(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	want := []RemovedImage{{ID: imageID(0), Size: 1024, Reason: ReasonAge}, {ID: imageID(2), Size: 10, Reason: ReasonAge}}
	if diff := cmp.Diff(want, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if got := rt.imageIDs(); !slices.Equal(got, []string{imageID(1)}) {
		t.Errorf("left %v, want image-1 (in use)", got)
	}
}

func TestGarbageCollectMaximumAgeDisabled(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 2048))
	rt.use(1)
	m, clk := newManager(t, rt, WithPolicy(Policy{HighThresholdPercent: 90, LowThresholdPercent: 80}),
		WithFilesystem(&fakeFS{capacity: 100, available: 100}))
	if err := m.GarbageCollect(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(time.Unix(1<<62, 0))
	if err := m.GarbageCollect(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(rt.imageIDs()); n != 2 {
		t.Errorf("%d images left, want 2", n)
	}
}

func TestGarbageCollectMaximumAgeRemovalError(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1024))
	denied := status.Error(codes.Unknown, "read-only file system")
	rt.removeErr[imageID(0)] = denied
	ffs := &fakeFS{capacity: 100, available: 100}
	m, clk := newManager(t, rt, WithPolicy(Policy{HighThresholdPercent: 90, MaxAge: time.Second}), WithFilesystem(ffs))
	clk.Step(2 * time.Second)
	err := m.GarbageCollect(ctxFor(t))
	if !errors.Is(err, ErrRemoveFailed) || !errors.Is(err, denied) {
		t.Fatalf("err %v", err)
	}
	if want := "wanted to free images older than 1s, encountered errors in image deletion: rpc error: code = Unknown desc = read-only file system"; err.Error() != want {
		t.Errorf("err %q\nwant %q", err, want)
	}
	if len(ffs.asked) != 0 {
		t.Errorf("the filesystem was read after a failed age removal, as kubelet does not")
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Policy
		want   string
	}{
		{name: "low below high", policy: Policy{HighThresholdPercent: 2, LowThresholdPercent: 1}},
		{name: "high < 0", policy: Policy{HighThresholdPercent: -1}, want: "invalid HighThresholdPercent -1, must be in range [0-100]"},
		{name: "high > 100", policy: Policy{HighThresholdPercent: 101}, want: "invalid HighThresholdPercent 101, must be in range [0-100]"},
		{name: "low < 0", policy: Policy{LowThresholdPercent: -1}, want: "invalid LowThresholdPercent -1, must be in range [0-100]"},
		{name: "low > 100", policy: Policy{HighThresholdPercent: 100, LowThresholdPercent: 101}, want: "invalid LowThresholdPercent 101, must be in range [0-100]"},
		{name: "low > high", policy: Policy{HighThresholdPercent: 1, LowThresholdPercent: 2}, want: "LowThresholdPercent 2 can not be higher than HighThresholdPercent 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(newFakeRuntime(), WithPolicy(tc.policy))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPolicy) || err.Error() != tc.want {
				t.Errorf("err %v, want %q matching ErrInvalidPolicy", err, tc.want)
			}
		})
	}
}

func TestPullRecordsPruned(t *testing.T) {
	ctx := ctxFor(t)
	rt := newFakeRuntime(makeImage(0, 1024), makeImage(1, 1024), makeImage(2, 1024))
	rt.use(1)
	rec, err := pullrecords.New(ctx, pullrecords.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{imageID(0), imageID(1), imageID(2), "image-elsewhere"} {
		if err := rec.RecordPullIntent("example.com/" + ref + ":1"); err != nil {
			t.Fatal(err)
		}
		if err := rec.RecordImagePulled(ctx, "example.com/"+ref+":1", ref, &pullrecords.Credentials{NodePodsAccessible: true}); err != nil {
			t.Fatal(err)
		}
	}
	rt.removeErr[imageID(2)] = status.Error(codes.Unknown, "busy")
	// The pass begins after the records were written (the records' times
	// are the wall clock's).
	clk := testingclock.NewFakeClock(time.Now().Add(time.Hour))
	m, err := New(rt, WithClock(clk), WithPolicy(Policy{}), WithPullRecords(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteUnusedImages(ctx); !errors.Is(err, ErrRemoveFailed) {
		t.Fatalf("err %v", err)
	}
	for ref, want := range map[string]bool{imageID(0): false, imageID(1): true, imageID(2): true, "image-elsewhere": false} {
		_, ok, err := rec.Record(ref)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Errorf("record of %s kept %v, want %v", ref, ok, want)
		}
	}
}

// TestRun: a pass at once, one every Period after, ImageGCFailed only for a
// failure that follows a failure, and Run ends with its context.
func TestRun(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1))
	rt.listErr = status.Error(codes.Unavailable, "down")
	rec := &recorder{}
	passes := make(chan Pass)
	m, clk := newManager(t, rt, WithPolicy(DefaultPolicy()), WithFilesystem(&fakeFS{capacity: 100, available: 100}),
		WithRecorder(rec, NodeRef("n")), WithOnPass(func(p Pass) { passes <- p }))
	ctx, cancel := context.WithCancel(ctxFor(t))
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()

	next := func() Pass {
		p := <-passes
		return p
	}
	if p := next(); p.Err == nil || !p.Time.Equal(t0) {
		t.Fatalf("first pass %+v", p)
	}
	if ev := rec.list(); len(ev) != 0 {
		t.Errorf("events after one failure: %v", ev)
	}
	waitTimer(t, clk)
	clk.Step(Period)
	if p := next(); p.Err == nil || !p.Time.Equal(t0.Add(Period)) {
		t.Fatalf("second pass %+v", p)
	}
	waitTimer(t, clk)
	if ev := rec.list(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ImageGCFailed list images: rpc error: code = Unavailable") {
		t.Errorf("events after two failures: %v", ev)
	}
	rt.mu.Lock()
	rt.listErr = nil
	rt.mu.Unlock()
	clk.Step(Period)
	if p := next(); p.Err != nil {
		t.Fatalf("third pass %+v", p)
	}
	waitTimer(t, clk)
	cancel()
	<-done
	if n := len(rec.list()); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

func TestRunDisabledOnlyDetects(t *testing.T) {
	rt := newFakeRuntime(makeImage(0, 1))
	passes := make(chan Pass)
	m, _ := newManager(t, rt, WithPolicy(Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}),
		WithFilesystem(&fakeFS{capacity: 100, available: 0}), WithOnPass(func(p Pass) { passes <- p }))
	ctx, cancel := context.WithCancel(ctxFor(t))
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	if p := <-passes; p.Kind != "Detect" || len(p.Removed) != 0 {
		t.Errorf("pass %+v, want detection only", p)
	}
	cancel()
	<-done
	if r := recordOf(t, m, imageID(0)); !r.firstDetected.Equal(t0) {
		t.Errorf("record %+v", r)
	}
}

// waitTimer waits until Run is waiting on the clock. The fake clock's
// HasWaiters is the only signal there is; each loop yields to Run.
func waitTimer(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	for !clk.HasWaiters() {
		goruntime.Gosched()
	}
}

// TestWithRuntimeFake runs passes against runtime/fake, in process and
// over CRI's gRPC wire: a running container's image, an exited
// container's image and an image mounted as a volume are kept; the rest go.
func TestWithRuntimeFake(t *testing.T) {
	for _, wire := range []bool{false, true} {
		t.Run(map[bool]string{false: "in process", true: "wire"}[wire], func(t *testing.T) {
			ctx := ctxFor(t)
			rtf := fake.New(fake.WithImageSize(100), fake.WithImages("busybox", "alpine", "nginx", "redis", "postgres"))
			var rt Runtime = rtf
			if wire {
				rt, _ = wiretest.Serve(t, rtf)
			}
			ids := map[string]string{}
			imgs, err := rt.ListImages(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range imgs {
				ids[img.RepoTags[0]] = img.Id
			}
			sb := rtf.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}},
				runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
			seed := func(name, image string, state runtimeapi.ContainerState, mounts ...*runtimeapi.Mount) {
				_, err := rtf.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name},
					Image: &runtimeapi.ImageSpec{Image: image}, Mounts: mounts}, fake.Seeded{State: state})
				if err != nil {
					t.Fatal(err)
				}
			}
			seed("run", "busybox", runtimeapi.ContainerState_CONTAINER_RUNNING,
				&runtimeapi.Mount{ContainerPath: "/data", Image: &runtimeapi.ImageSpec{Image: ids["docker.io/library/nginx:latest"]}})
			seed("done", "alpine", runtimeapi.ContainerState_CONTAINER_EXITED)
			ffs := &fakeFS{capacity: 1000, available: 100} // 90% used: 100 bytes to free
			var removed []RemovedImage
			m, err := New(rt, WithFilesystem(ffs), WithPolicy(Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}),
				WithOnPass(func(p Pass) { removed = append(removed, p.Removed...) }))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.GarbageCollect(ctx); err != nil {
				t.Fatal(err)
			}
			if len(removed) != 1 || (removed[0].ID != ids["docker.io/library/redis:latest"] && removed[0].ID != ids["docker.io/library/postgres:latest"]) {
				t.Errorf("removed %+v, want one of redis and postgres", removed)
			}
			if len(ffs.asked) != 1 || ffs.asked[0] != fake.DefaultImageFsMountpoint {
				t.Errorf("measured %v", ffs.asked)
			}
			if err := m.DeleteUnusedImages(ctx); err != nil {
				t.Fatal(err)
			}
			left, err := rt.ListImages(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var tags []string
			for _, img := range left {
				tags = append(tags, img.RepoTags[0])
			}
			slices.Sort(tags)
			want := []string{"docker.io/library/alpine:latest", "docker.io/library/busybox:latest", "docker.io/library/nginx:latest"}
			if diff := cmp.Diff(want, tags); diff != "" {
				t.Errorf("images left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatfs(t *testing.T) {
	c, a, err := Statfs{}.Usage(context.Background(), t.TempDir())
	if goruntime.GOOS != "linux" {
		t.Skip("statfs is Linux only")
	}
	if err != nil || c == 0 || a > c {
		t.Errorf("capacity %d, available %d, err %v", c, a, err)
	}
	_, _, err = Statfs{}.Usage(context.Background(), t.TempDir()+"/missing")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: err %v, want fs.ErrNotExist", err)
	}
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB",
		10 << 30: "10.0 GiB", 3 << 40: "3.0 TiB", 2048 << 40: "2048.0 TiB",
	} {
		if got := formatSize(in); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", in, got, want)
		}
	}
}
