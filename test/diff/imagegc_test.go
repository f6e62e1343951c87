package diff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tracenoop "go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	kubeimages "k8s.io/kubernetes/pkg/kubelet/images"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/imagegc"
)

// gcImage is one image of a random node.
type gcImage struct {
	id     string
	size   int64
	pinned bool
}

// gcNode is the random node both collectors look at in one round.
type gcNode struct {
	images              []gcImage
	inUse               []string // image IDs the node's containers use
	capacity, available uint64
}

// podstartGC is the runtime imagegc sees: the round's node.
type podstartGC struct {
	mu   sync.Mutex
	node *gcNode
}

func (p *podstartGC) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range p.node.images {
		out = append(out, &runtimeapi.Image{Id: img.id, Size: uint64(img.size), Pinned: img.pinned})
	}
	return out, nil
}

func (p *podstartGC) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.node.images = slices.DeleteFunc(p.node.images, func(i gcImage) bool { return i.id == spec.GetImage() })
	return nil
}

func (p *podstartGC) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*runtimeapi.Container
	for i, id := range p.node.inUse {
		out = append(out, &runtimeapi.Container{Id: fmt.Sprintf("c%d", i), Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image: &runtimeapi.ImageSpec{Image: id}, ImageRef: id, ImageId: id})
	}
	return out, nil
}

func (p *podstartGC) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id}}, nil
}

func (p *podstartGC) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{
		{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/images"}}}}, nil
}

func (p *podstartGC) Usage(context.Context, string) (uint64, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.node.capacity, p.node.available, nil
}

// kubeletStats is kubelet's StatsProvider for the same node.
type kubeletStats struct{ node *gcNode }

func (k kubeletStats) ImageFsStats(context.Context) (*statsapi.FsStats, *statsapi.FsStats, error) {
	c, a := k.node.capacity, k.node.available
	fs := &statsapi.FsStats{CapacityBytes: &c, AvailableBytes: &a}
	return fs, fs, nil
}

type eventList struct {
	mu     sync.Mutex
	events []string
}

func (e *eventList) Eventf(_ apiruntime.Object, typ, reason, format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, typ+" "+reason+" "+fmt.Sprintf(format, args...))
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestImageGC runs kubelet v1.37.2's NewImageGCManager (over kubelet's
// FakeRuntime) and imagegc.Manager side by side through rounds of a random
// node: each round may add one image (so no two never-used images share a
// first-detection time, whose order kubelet leaves to map iteration), puts
// random images in use by containers, sets the image filesystem's usage,
// and runs GarbageCollect (or, one round in four, DeleteUnusedImages) on
// both. After each round the images left, the error text and the events
// must be equal. Kubelet measures ages on the wall clock, so ages are
// chosen to be either far shorter or far longer than the policy's: MinAge
// is 0 or an hour, MaxAge 0 or an hour with both managers older than that.
func TestImageGC(t *testing.T) {
	r := newRand(t)
	n := cases(300)
	d := differences{t: t}
	var st gcStats
	for c := range n {
		imageGCCase(t, r, c, &d, &st)
	}
	t.Logf("%d cases, %d rounds compared: %d removed images (%d of them keeping some unused image), %d failed (%d with FreeDiskSpaceFailed)",
		n, st.rounds, st.removing, st.partial, st.failed, st.events)
	if st.removing == 0 || st.partial == 0 || st.failed == 0 || st.events == 0 {
		t.Errorf("the random nodes never exercised some outcome: %+v", st)
	}
	d.report(n, "image GC cases")
}

// gcStats counts the outcomes the random rounds reached.
type gcStats struct{ rounds, removing, partial, failed, events int }

func imageGCCase(t *testing.T, r *rand.Rand, c int, d *differences, st *gcStats) {
	ctx := context.Background()
	high := r.IntN(101)
	policy := kubeimages.ImageGCPolicy{HighThresholdPercent: high, LowThresholdPercent: r.IntN(high + 1)}
	if r.IntN(3) == 0 {
		policy.MinAge = time.Hour
	}
	if r.IntN(3) == 0 {
		policy.MaxAge = time.Hour
	}
	node := &gcNode{capacity: 10000}
	var kImages []kubecontainer.Image
	kRuntime := &containertest.FakeRuntime{}
	kRec := record.NewFakeRecorder(100)
	km, err := kubeimages.NewImageGCManager(kRuntime, kubeletStats{node}, nil, kRec,
		&corev1.ObjectReference{Kind: "Node", Name: "n"}, policy, tracenoop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	pRuntime := &podstartGC{node: node}
	pRec := &eventList{}
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pm, err := imagegc.New(pRuntime, imagegc.WithClock(clk), imagegc.WithFilesystem(pRuntime),
		imagegc.WithRecorder(pRec, imagegc.NodeRef("n")),
		imagegc.WithPolicy(imagegc.Policy{HighThresholdPercent: policy.HighThresholdPercent,
			LowThresholdPercent: policy.LowThresholdPercent, MinAge: policy.MinAge, MaxAge: policy.MaxAge}))
	if err != nil {
		t.Fatal(err)
	}
	// Both managers are older than MaxAge from the first round.
	beganGC := time.Now().Add(-2 * time.Hour)
	clk.Step(2 * time.Hour)

	nRounds := 1 + r.IntN(10)
	for round := range nRounds {
		clk.Step(time.Second)
		if round == 0 || r.IntN(5) != 0 {
			id := fmt.Sprintf("sha256:%d-%d", c, round)
			img := gcImage{id: id, size: 1 + r.Int64N(3000), pinned: r.IntN(7) == 0}
			node.images = append(node.images, img)
		}
		node.inUse = nil
		for _, img := range node.images {
			if r.IntN(3) == 0 {
				node.inUse = append(node.inUse, img.id)
			}
		}
		node.available = uint64(r.IntN(10001))
		if r.IntN(2) == 0 {
			// Near the low threshold's mark, so that what must be freed is
			// about what the unused images hold and the choice matters.
			var total int64
			for _, img := range node.images {
				total += img.size
			}
			mark := int64(node.capacity) * int64(100-policy.LowThresholdPercent) / 100
			node.available = uint64(max(0, mark-r.Int64N(total+total/5+1)))
		}
		// Kubelet's fake runtime: the same images and containers.
		kImages = kImages[:0]
		for _, img := range node.images {
			kImages = append(kImages, kubecontainer.Image{ID: img.id, Size: img.size, Pinned: img.pinned})
		}
		var ctrs []*kubecontainer.Container
		for i, id := range node.inUse {
			ctrs = append(ctrs, &kubecontainer.Container{ID: kubecontainer.ContainerID{Type: "test", ID: fmt.Sprintf("c%d", i)}, ImageID: id})
		}
		kRuntime.Lock()
		kRuntime.ImageList = slices.Clone(kImages)
		kRuntime.AllPodList = []*containertest.FakePod{{Pod: &kubecontainer.Pod{Containers: ctrs}}}
		kRuntime.Unlock()

		deleteUnused := r.IntN(4) == 0
		var kErr, pErr error
		before := len(node.images)
		if deleteUnused {
			kErr, pErr = km.DeleteUnusedImages(ctx), pm.DeleteUnusedImages(ctx)
		} else {
			kErr, pErr = km.GarbageCollect(ctx, beganGC), pm.GarbageCollect(ctx)
		}
		kRuntime.Lock()
		var kLeft []string
		for _, img := range kRuntime.ImageList {
			kLeft = append(kLeft, img.ID)
		}
		kRuntime.Unlock()
		var pLeft []string
		for _, img := range node.images {
			pLeft = append(pLeft, img.id)
		}
		kEvents, pEvents := drain(kRec), slices.Clone(pRec.events)
		pRec.events = nil
		what := "GarbageCollect"
		if deleteUnused {
			what = "DeleteUnusedImages"
		}
		desc := fmt.Sprintf("case %d round %d %s policy %+v usage %d/%d in use %v", c, round, what, policy,
			node.capacity-node.available, node.capacity, node.inUse)
		st.rounds++
		if len(kLeft) < before {
			st.removing++
			for _, img := range node.images {
				if !img.pinned && !slices.Contains(node.inUse, img.id) {
					st.partial++ // an unused image kept: the choice mattered
					break
				}
			}
		}
		if kErr != nil {
			st.failed++
		}
		if len(kEvents) > 0 {
			st.events++
		}
		switch {
		case !slices.Equal(kLeft, pLeft):
			d.add("%s: images left %v, kubelet %v", desc, pLeft, kLeft)
			return
		case errText(kErr) != errText(pErr):
			d.add("%s: error %q, kubelet %q", desc, errText(pErr), errText(kErr))
			return
		case !slices.Equal(kEvents, pEvents):
			d.add("%s: events %q, kubelet %q", desc, pEvents, kEvents)
			return
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}

// TestImageGCPullRecordPruning shows the one deliberate difference in what
// is pruned (imagegc's package doc): kubelet v1.37.2 hands its post-GC
// hooks (the pull manager's PruneUnknownRecords) only the images its
// removal loop looked at and kept, so an image in use and a pinned image
// are missing from the list and their pulled records are deleted; imagegc
// keeps the record of every image still on the node.
func TestImageGCPullRecordPruning(t *testing.T) {
	ctx := context.Background()
	node := &gcNode{capacity: 1000, available: 0, inUse: []string{"sha256:used"}, images: []gcImage{
		{id: "sha256:used", size: 100}, {id: "sha256:pinned", size: 100, pinned: true}, {id: "sha256:old", size: 900}}}
	var kubeletKept []string
	hookCalled := false
	kRuntime := &containertest.FakeRuntime{
		ImageList: []kubecontainer.Image{{ID: "sha256:used", Size: 100}, {ID: "sha256:pinned", Size: 100, Pinned: true}, {ID: "sha256:old", Size: 900}},
		AllPodList: []*containertest.FakePod{{Pod: &kubecontainer.Pod{Containers: []*kubecontainer.Container{
			{ID: kubecontainer.ContainerID{Type: "test", ID: "c"}, ImageID: "sha256:used"}}}}},
	}
	hook := func(_ context.Context, remaining []string, _ time.Time) { hookCalled, kubeletKept = true, remaining }
	km, err := kubeimages.NewImageGCManager(kRuntime, kubeletStats{node}, []kubeimages.PostImageGCHook{hook}, record.NewFakeRecorder(10),
		&corev1.ObjectReference{Kind: "Node", Name: "n"}, kubeimages.ImageGCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}, tracenoop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	if err := km.GarbageCollect(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !hookCalled || slices.Contains(kubeletKept, "sha256:used") || slices.Contains(kubeletKept, "sha256:pinned") {
		t.Fatalf("kubelet's hook got %v (called %v); the difference documented in imagegc's doc is gone", kubeletKept, hookCalled)
	}

	pRuntime := &podstartGC{node: node}
	pr := &prunes{}
	pm, err := imagegc.New(pRuntime, imagegc.WithFilesystem(pRuntime), imagegc.WithPullRecords(pr),
		imagegc.WithPolicy(imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pr.kept, []string{"sha256:used", "sha256:pinned"}) {
		t.Errorf("imagegc keeps the records of %v, want the images left on the node", pr.kept)
	}
}

type prunes struct{ kept []string }

func (p *prunes) PruneUnknownRecords(_ context.Context, inUse []string, _ time.Time) { p.kept = inUse }
