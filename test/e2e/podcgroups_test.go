package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/test/kubeletrun"
)

// Pod cgroups on containerd through podworker: a Guaranteed pod's cgroup
// is made before its sandbox with its limit, the container's cgroup is
// under it, an in-place resize of the container resizes the pod's
// cgroup, and deleting the pod leaves no pod cgroup.
func TestPodCgroupsOnContainerd(t *testing.T) {
	e, rt := setup(t)
	if os.Geteuid() != 0 {
		t.Fatal("the real-runtime tier runs as root")
	}
	ctx := context.Background()
	root := fmt.Sprintf("/podstart-e2e-cgroups-%d", os.Getpid())
	if err := kubeletrun.MakeCgroupRoot(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kubeletrun.RemoveCgroupRoot(ctx, root); err != nil {
			t.Error(err)
		}
	})
	tree, err := cgroups.DetectTree("")
	if err != nil {
		t.Fatal(err)
	}
	node := criconfig.Node{CgroupRoot: root}
	m, err := cgroups.NewManager(tree, node, cgroups.WithNodeAllocatable(cgroups.NodeAllocatable{Capacity: cgroups.HostCapacity()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	ims := images.NewManager(rt)
	t.Cleanup(func() { ims.Close() })
	dir := t.TempDir()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(dir), podsync.WithPodLogsDir(filepath.Join(dir, "logs")), podsync.WithNode(node))
	var mu sync.Mutex
	states := map[types.UID]podworker.PodState{}
	w := podworker.New(syncer, podworker.WithPodCgroups(m), podworker.WithRelistPeriod(200*time.Millisecond),
		podworker.WithOnSync(func(uid types.UID, st podworker.PodState) { mu.Lock(); states[uid] = st; mu.Unlock() }))
	t.Cleanup(func() { w.Close() })

	limits := func(mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	c := sleeper("app", e.openImage)
	c.Resources = limits("32Mi")
	pod := newPod(t, rt, "pod-cgroups", c)
	podName, err := m.PodName(pod)
	if err != nil {
		t.Fatal(err)
	}
	memFile := filepath.Join(cgroups.DefaultRoot, "memory", podName.Cgroupfs(), "memory.limit_in_bytes")
	poll := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) { // polling containerd and the cgroup files
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	readMem := func() string { b, _ := os.ReadFile(memFile); return string(b) }
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	poll("the pod running", func() bool {
		mu.Lock()
		defer mu.Unlock()
		st := states[pod.UID]
		if st.Status == nil {
			return false
		}
		cs := st.Status.FindContainerStatusByName("app")
		return cs != nil && cs.State == podsync.ContainerStateRunning
	})
	if got := readMem(); got != "33554432\n" {
		t.Errorf("pod cgroup %s = %q, want 32Mi", memFile, got)
	}
	// The container's cgroup is under the pod's: its process is in the pod cgroup's tree.
	pids, err := m.Pids(podName)
	if err != nil || len(pids) == 0 {
		t.Errorf("no process in the pod cgroup %s: %v, %v", podName.Cgroupfs(), pids, err)
	}

	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources = limits("64Mi")
	if err := w.Upsert(resized); err != nil {
		t.Fatal(err)
	}
	poll("the pod cgroup resized to 64Mi", func() bool { return readMem() == "67108864\n" })

	if err := w.Delete(resized, nil); err != nil {
		t.Fatal(err)
	}
	poll("the pod removed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return states[pod.UID].Removed
	})
	if ok, err := m.Exists(podName); ok || err != nil {
		t.Errorf("the pod cgroup is left after the pod: %v, %v", ok, err)
	}
}
