package imagegc

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is a small in-memory Runtime whose images carry sizes and
// pins, as kubelet's FakeRuntime does for its image GC tests.
type fakeRuntime struct {
	mu         sync.Mutex
	images     []*runtimeapi.Image
	containers []*runtimeapi.Container
	mounts     map[string][]string // container ID -> image IDs mounted
	gone       map[string]bool     // containers whose status is NotFound
	removeErr  map[string]error    // image ID -> RemoveImage error
	listErr    error
	fsInfoErr  error
	mountpoint string
	keep       bool // RemoveImage succeeds without removing (benchmarks)
	removed    []string
}

func newFakeRuntime(images ...*runtimeapi.Image) *fakeRuntime {
	return &fakeRuntime{images: images, mountpoint: "/images", mounts: map[string][]string{},
		gone: map[string]bool{}, removeErr: map[string]error{}}
}

// makeImage is kubelet's test helper: image-<n> of the given size.
func makeImage(n int, size uint64) *runtimeapi.Image {
	return &runtimeapi.Image{Id: imageID(n), Size: size}
}

func imageID(n int) string { return fmt.Sprintf("image-%d", n) }

// use adds a container running image-<n>.
func (f *fakeRuntime) use(ns ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range ns {
		f.containers = append(f.containers, &runtimeapi.Container{
			Id: fmt.Sprintf("container-%d-%d", n, len(f.containers)), Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image: &runtimeapi.ImageSpec{Image: imageID(n) + "-name"}, ImageRef: imageID(n), ImageId: imageID(n),
			State: runtimeapi.ContainerState_CONTAINER_RUNNING,
		})
	}
}

func (f *fakeRuntime) setContainers(ns ...int) {
	f.mu.Lock()
	f.containers = nil
	f.mu.Unlock()
	f.use(ns...)
}

func (f *fakeRuntime) setImages(imgs ...*runtimeapi.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images = imgs
}

func (f *fakeRuntime) imageIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, img := range f.images {
		ids = append(ids, img.Id)
	}
	return ids
}

func (f *fakeRuntime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	return slices.Clone(f.images), nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.removeErr[spec.GetImage()]; err != nil {
		return err
	}
	f.removed = append(f.removed, spec.GetImage())
	if f.keep {
		return nil
	}
	// As kubelet's FakeRuntime: the first image with the ID goes.
	for i, img := range f.images {
		if img.Id == spec.GetImage() {
			f.images = slices.Delete(f.images, i, i+1)
			break
		}
	}
	return nil
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.containers), nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone[id] {
		return nil, status.Error(codes.NotFound, "container not found")
	}
	st := &runtimeapi.ContainerStatus{Id: id}
	for _, img := range f.mounts[id] {
		st.Mounts = append(st.Mounts, &runtimeapi.Mount{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: img}})
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (f *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fsInfoErr != nil {
		return nil, f.fsInfoErr
	}
	if f.mountpoint == "-" {
		return &runtimeapi.ImageFsInfoResponse{}, nil
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{
		{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.mountpoint}}}}, nil
}

// fakeFS answers Usage with fixed numbers.
type fakeFS struct {
	capacity, available uint64
	err                 error
	asked               []string
}

func (f *fakeFS) Usage(_ context.Context, path string) (uint64, uint64, error) {
	f.asked = append(f.asked, path)
	return f.capacity, f.available, f.err
}

// recorder keeps events as client-go's FakeRecorder formats them.
type recorder struct {
	mu     sync.Mutex
	events []string
	objs   []apiruntime.Object
}

func (r *recorder) Eventf(obj apiruntime.Object, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+" "+fmt.Sprintf(format, args...))
	r.objs = append(r.objs, obj)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}
