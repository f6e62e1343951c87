package eviction_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/runtime/fake"
)

func writeProc(t *testing.T, meminfo string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"meminfo":                meminfo,
		"loadavg":                "1.36 3.49 4.53 2/3518 3715089\n",
		"sys/kernel/pid_max":     "4194304\n",
		"sys/kernel/threads-max": "127000\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fakeStatfs(fs map[string]eviction.FsUsage) func(string) (eviction.FsUsage, error) {
	return func(path string) (eviction.FsUsage, error) {
		u, ok := fs[path]
		if !ok {
			return u, errors.New("no such filesystem")
		}
		return u, nil
	}
}

type hog struct {
	rt      *fake.Runtime
	pods    []*corev1.Pod
	evicted []eviction.Eviction
}

func (h *hog) ActivePods() []*corev1.Pod { return h.pods }
func (h *hog) Evict(_ context.Context, e eviction.Eviction) error {
	h.evicted = append(h.evicted, e)
	return nil
}

// A pod's memory, as the runtime reports it through CRI stats, drives an
// eviction with kubelet's message: the whole path from a runtime to the
// Killer.
func TestCRISourceEvictsTheHog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := fake.New(fake.WithImages("busybox"), fake.WithImageFsMountpoint("/images"))
	var pods []*corev1.Pod
	ids := map[string]string{}
	for _, name := range []string{"quiet", "hog"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}}}}}
		pods = append(pods, pod)
		sbConfig := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: string(pod.UID)}}
		sb, err := rt.RunPodSandbox(ctx, sbConfig, "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image: &runtimeapi.ImageSpec{Image: "busybox"}}, sbConfig)
		if err != nil {
			t.Fatal(err)
		}
		// kubelet counts running containers only
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	if err := rt.SetMemoryUsage(ids["quiet"], 50<<20); err != nil {
		t.Fatal(err)
	}
	if err := rt.SetMemoryUsage(ids["hog"], 700<<20); err != nil {
		t.Fatal(err)
	}
	// 1 GiB of memory, 950 MiB of it in use
	proc := writeProc(t, "MemTotal: 1048576 kB\nMemFree: 51200 kB\nInactive(file): 0 kB\n")
	src := eviction.NewCRISource(rt, rt, eviction.WithProcDir(proc), eviction.WithRootDir("/var/lib/kubelet"),
		eviction.WithStatfs(fakeStatfs(map[string]eviction.FsUsage{
			"/var/lib/kubelet": {CapacityBytes: 100 << 30, AvailableBytes: 50 << 30, Inodes: 1000, InodesFree: 900},
			"/images":          {CapacityBytes: 200 << 30, AvailableBytes: 100 << 30, Inodes: 2000, InodesFree: 1000},
		})))
	sum, err := src.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs := eviction.Observe(sum)
	for s, want := range map[eviction.Signal]string{
		eviction.SignalMemoryAvailable:       "50Mi",
		eviction.SignalNodeFsAvailable:       "50Gi",
		eviction.SignalImageFsAvailable:      "100Gi",
		eviction.SignalContainerFsAvailable:  "100Gi",
		eviction.SignalImageFsInodesFree:     "1k",
		eviction.SignalPIDAvailable:          "123482",
		eviction.SignalNodeFsInodesFree:      "900",
		eviction.SignalContainerFsInodesFree: "1k",
	} {
		if o, ok := obs[s]; !ok || o.Available.String() != want {
			t.Errorf("%s: %v (observed %v), want %s", s, o.Available.String(), ok, want)
		}
	}
	if _, ok := obs[eviction.SignalAllocatableMemoryAvailable]; ok {
		t.Error("allocatableMemory.available observed without the pods cgroup")
	}

	h := &hog{rt: rt, pods: pods}
	m := eviction.New(src, h)
	if _, err := m.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(h.evicted) != 1 || h.evicted[0].Pod.Name != "hog" {
		t.Fatalf("evicted %+v, want the hog", h.evicted)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 700Mi, request is 100Mi, has larger consumption of memory. "
	if h.evicted[0].Message != want {
		t.Errorf("message %q, want %q", h.evicted[0].Message, want)
	}
}

func TestCRISourceErrors(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	boom := errors.New("boom")
	src := eviction.NewCRISource(rt, nil, eviction.WithProcDir(t.TempDir()), eviction.WithStatfs(fakeStatfs(nil)),
		eviction.WithPodsMemory(func(context.Context) (*statsapi.MemoryStats, error) { return nil, boom }))
	if _, err := src.Summary(context.Background()); !errors.Is(err, boom) {
		t.Errorf("error %v, want the pods cgroup's", err)
	}
	// nothing readable: no node signals, no error
	src = eviction.NewCRISource(rt, nil, eviction.WithProcDir(t.TempDir()), eviction.WithStatfs(fakeStatfs(nil)))
	sum, err := src.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if obs := eviction.Observe(sum); len(obs) != 0 {
		t.Errorf("observed %v from nothing", obs)
	}
}
