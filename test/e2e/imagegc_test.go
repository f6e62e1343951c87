package e2e

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/runtime"
)

// Image garbage collection against containerd. Six images (busybox with a
// 3 MiB random layer each, pushed to the open registry with env.sh's
// crane) are pulled: podstart-gc:0 by a pod that keeps running, then 1 to
// 5, each followed by a pass that only detects them (so the Manager knows
// the order they came in). The real image filesystem (the host's disk) is
// far too large to cross a threshold, so the Manager is given a
// Filesystem whose capacity is scaled to the test: the images' own bytes,
// as the runtime reports them, are the used space, and the capacity is
// set so that they fill 90% of it. With the thresholds scaled too (high
// 70%, low 40%, no minimum age), one GarbageCollect pass must free down
// to 40%: it removes the four least recently used unused images (1 to 4),
// never 0 (in use, and the oldest), and containerd no longer has them.
//
// containerd 1.6's ImageFsInfo is no measure of the pass: it counts its
// snapshots in the background every few seconds, and the host's disk is
// shared with the other tests; the removal is shown by containerd's image
// list instead.
//
// The Manager sees only this test's images (other tests share containerd
// and their images must not be collected under them); it sees every
// container, so in-use detection is the real one.
func TestImageGCOnContainerd(t *testing.T) {
	const (
		high, low = 70, 40
		layerSize = 3 << 20
		n         = 6
	)
	e, rt := setup(t)
	registry, _, _ := strings.Cut(e.openImage, "/")
	repo := registry + "/podstart-gc"
	refs := make([]string, n)
	for i := range refs {
		refs[i] = fmt.Sprintf("%s:%d", repo, i)
	}
	removeImages(t, rt, repo) // left by a run that died before its cleanup
	t.Cleanup(func() {        // after the pod's removal (cleanups run last first)
		removeImages(t, rt, repo)
	})
	pushGCImages(t, e.openImage, refs, layerSize)

	view := &imageView{Runtime: rt, repo: repo}
	fsys := &imageBytesFS{view: view}
	fsys.capacity.Store(1 << 50)
	var (
		pmu    sync.Mutex
		passes []imagegc.Pass
	)
	m, err := imagegc.New(view, imagegc.WithFilesystem(fsys),
		imagegc.WithPolicy(imagegc.Policy{HighThresholdPercent: high, LowThresholdPercent: low}),
		imagegc.WithOnPass(func(p imagegc.Pass) { pmu.Lock(); passes = append(passes, p); pmu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	a := newAgent(t, rt, t.TempDir())
	pod := newPod(t, rt, "image-gc", sleeper("app", refs[0]))
	a.converge(pod)
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs[1:] {
		if _, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: ref}, nil, nil); err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		if err := m.GarbageCollect(ctx); err != nil {
			t.Fatalf("detection pass: %v", err)
		}
	}
	imgs, err := view.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{} // image ID → tag
	var sizes []uint64
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			ids[img.Id] = tag
		}
		sizes = append(sizes, img.GetSize())
	}
	if len(ids) != n {
		t.Fatalf("containerd has %d of the test's images, want %d: %v", len(ids), n, ids)
	}
	used, _ := fsys.used(ctx)
	fsys.capacity.Store(used * 100 / 90)

	start := time.Now()
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	took := time.Since(start)
	pmu.Lock()
	p := passes[len(passes)-1]
	pmu.Unlock()
	capacity, avail, err := fsys.Usage(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	after := 100 - int(avail*100/capacity)
	var removed []string
	for _, r := range p.Removed {
		removed = append(removed, ids[r.ID])
	}
	t.Logf("image sizes %v; scaled capacity %d bytes; before the pass: %d%% used (%d bytes); the pass (%v) removed %v; after: %d%% used (%d bytes)",
		sizes, capacity, p.UsagePercent, used, took.Round(time.Millisecond), removed, after, capacity-avail)
	if p.UsagePercent < high {
		t.Fatalf("usage before the pass %d%%: not over the high threshold %d%%", p.UsagePercent, high)
	}
	if after >= low {
		t.Errorf("usage after the pass %d%%, want under the low threshold %d%%", after, low)
	}
	if want := refs[1:5]; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want the least recently used unused images %v", removed, want)
	}
	all, err := rt.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, img := range all {
		for _, tag := range img.RepoTags {
			left[tag] = true
		}
	}
	for i, ref := range refs {
		if want := i == 0 || i == 5; left[ref] != want {
			t.Errorf("after the pass containerd has %s: %v, want %v", ref, left[ref], want)
		}
	}
	if !running(pod, a.status(pod)) {
		t.Error("the pod using podstart-gc:0 is not running after the pass")
	}
}

// imageView shows an image GC Manager only the images of one repository.
type imageView struct {
	imagegc.Runtime
	repo string
}

func (v *imageView) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	imgs, err := v.Runtime.ListImages(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.Image
	for _, img := range imgs {
		if slices.ContainsFunc(img.RepoTags, func(tag string) bool { return strings.HasPrefix(tag, v.repo+":") }) {
			out = append(out, img)
		}
	}
	return out, nil
}

// imageBytesFS is an image filesystem of a set capacity whose used bytes
// are the sizes of the images the view lists.
type imageBytesFS struct {
	view     *imageView
	capacity atomic.Uint64
}

func (f *imageBytesFS) used(ctx context.Context) (uint64, error) {
	imgs, err := f.view.ListImages(ctx, nil)
	if err != nil {
		return 0, err
	}
	var used uint64
	for _, img := range imgs {
		used += img.GetSize()
	}
	return used, nil
}

func (f *imageBytesFS) Usage(ctx context.Context, _ string) (capacity, available uint64, err error) {
	used, err := f.used(ctx)
	c := f.capacity.Load()
	return c, c - min(used, c), err
}

// removeImages removes from containerd every image tagged in repo.
func removeImages(t *testing.T, rt *runtime.Client, repo string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := (&imageView{Runtime: rt, repo: repo}).ListImages(ctx, nil)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, img := range imgs {
		if err := rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img.Id}); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("cleanup: remove image %v: %v", img.RepoTags, err)
		}
	}
}

// pushGCImages pushes each ref (unless the registry has it): base with one
// layer of size random bytes, the same for a ref on every run, so a rerun
// finds them pushed.
func pushGCImages(t *testing.T, base string, refs []string, size int) {
	t.Helper()
	crane := filepath.Join(e2eDir(), "bin", "crane")
	if _, err := os.Stat(crane); err != nil {
		t.Fatalf("crane (built by env.sh up): %v", err)
	}
	env := append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(e2eDir(), "docker"))
	dir := t.TempDir()
	for i, ref := range refs {
		digest := exec.Command(crane, "digest", ref)
		digest.Env = env
		if digest.Run() == nil {
			continue
		}
		layer := filepath.Join(dir, fmt.Sprintf("layer%d.tar", i))
		writeRandomLayer(t, layer, fmt.Sprintf("podstart-gc/%d", i), uint64(i), size)
		cmd := exec.Command(crane, "append", "-b", base, "-f", layer, "-t", ref)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("crane append %s: %v\n%s", ref, err, out)
		}
	}
}

func writeRandomLayer(t *testing.T, path, name string, seed uint64, size int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tar.NewWriter(f)
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(size), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	dirHdr := &tar.Header{Name: filepath.Dir(name) + "/", Mode: 0o755, ModTime: time.Unix(0, 0), Typeflag: tar.TypeDir}
	if err := w.WriteHeader(dirHdr); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	r := rand.NewChaCha8([32]byte{byte(seed), 'p', 'o', 'd', 's', 't', 'a', 'r', 't'})
	if _, err := io.CopyN(w, r, int64(size)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
