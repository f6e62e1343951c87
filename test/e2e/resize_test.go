package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// updates records UpdateContainerResources calls on their way to
// containerd; the client's other abilities pass through.
type updates struct {
	*runtime.Client
	mu    sync.Mutex
	calls []*runtimeapi.LinuxContainerResources
}

func (u *updates) UpdateContainerResources(ctx context.Context, id string, r *runtimeapi.ContainerResources) error {
	u.mu.Lock()
	u.calls = append(u.calls, r.GetLinux())
	u.mu.Unlock()
	return u.Client.UpdateContainerResources(ctx, id, r)
}

func (u *updates) take() []*runtimeapi.LinuxContainerResources {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.calls
	u.calls = nil
	return out
}

// cpuMax reads the container's CFS quota as its cgroup has it (cgroup v2
// cpu.max "<quota> <period>", or v1 cpu.cfs_quota_us).
func cpuMax(t *testing.T, rt *runtime.Client, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))[0]
}

// In-place resize on containerd: the CPU limit of a running container is
// raised and lowered with UpdateContainerResources and the cgroup follows,
// the container never restarts; a RestartContainer policy for memory
// restarts it with the new limit.
func TestResizeOnContainerd(t *testing.T) {
	e, rt := setup(t)
	root := t.TempDir()
	u := &updates{Client: rt}
	ims := images.NewManager(rt)
	t.Cleanup(func() { ims.Close() })
	syncer := podsync.NewSyncer(u, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	a := &agent{t: t, rt: rt, ims: ims, syncer: syncer, root: root}

	app := sleeper("app", e.openImage)
	app.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	app.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
	}
	mem := sleeper("mem", e.openImage)
	mem.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
	pod := newPod(t, rt, "resize", app, mem)
	a.converge(pod)
	id := a.status(pod).FindContainerStatusByName("app").ID
	if got := cpuMax(t, rt, id); got != "50000" {
		t.Fatalf("cpu quota %s at 500m", got)
	}

	for _, step := range []struct{ limit, quota string }{{"1500m", "150000"}, {"200m", "20000"}} {
		pod = pod.DeepCopy()
		pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse(step.limit)
		r := a.sync(pod)
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
		calls := u.take()
		if len(calls) != 1 || calls[0].CpuQuota != mustAtoi(step.quota) {
			t.Fatalf("%s: UpdateContainerResources calls %v", step.limit, calls)
		}
		if got := cpuMax(t, rt, id); got != step.quota {
			t.Fatalf("%s: cgroup quota %s, want %s", step.limit, got, step.quota)
		}
		st := a.status(pod)
		cs := st.FindContainerStatusByName("app")
		if cs.ID != id || cs.RestartCount != 0 {
			t.Fatalf("%s: restarted (%s, restart count %d)", step.limit, cs.ID, cs.RestartCount)
		}
		if podsync.ResizeInProgress(pod, st) {
			t.Fatalf("%s: still in progress", step.limit)
		}
		t.Logf("%s: cgroup quota %s, containerd reports cpu limit %v", step.limit, step.quota, cs.Resources)
	}

	// A memory limit lowered in place, after containerd's ContainerStats
	// said the use is below it.
	pod = pod.DeepCopy()
	pod.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("48Mi")
	if err := a.sync(pod).Error(); err != nil {
		t.Fatal(err)
	}
	if calls := u.take(); len(calls) != 1 || calls[0].MemoryLimitInBytes != 48<<20 {
		t.Fatalf("memory update calls %v", calls)
	}
	memID := a.status(pod).FindContainerStatusByName("mem").ID
	if got := memoryMax(t, rt, memID); got != "50331648" {
		t.Fatalf("memory.max %s after lowering", got)
	}

	// Memory of app asks for a restart.
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("96Mi")
	if err := a.sync(pod).Error(); err != nil {
		t.Fatal(err)
	}
	a.converge(pod)
	if calls := u.take(); len(calls) != 0 {
		t.Fatalf("memory updated in place: %v", calls)
	}
	cs := a.status(pod).FindContainerStatusByName("app")
	if cs.ID == id || cs.RestartCount != 1 {
		t.Fatalf("not restarted: %s, restart count %d", cs.ID, cs.RestartCount)
	}
	if got := memoryMax(t, rt, cs.ID); got != "100663296" {
		t.Fatalf("memory limit %s after the restart", got)
	}
}

func memoryMax(t *testing.T, rt *runtime.Client, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func mustAtoi(s string) int64 {
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}
