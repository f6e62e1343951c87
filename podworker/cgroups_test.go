package podworker_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

func memCgroups(t *testing.T) (*cgroups.MemFS, *cgroups.Manager) {
	t.Helper()
	tree := cgroups.NewMemFS(false)
	m, err := cgroups.NewManager(tree.Tree(), criconfig.Node{}, cgroups.WithKill(tree.Kill),
		cgroups.WithNodeAllocatable(cgroups.NodeAllocatable{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnsureQoS(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tree, m
}

// A pod's cgroup exists, with its values, before its sandbox and is gone
// once the pod is deleted; after an agent restart, the cgroup of a pod
// the new Workers do not have is swept with the pod.
func TestPodCgroups(t *testing.T) {
	tree, m := memCgroups(t)
	e := newEnv(t, nil, podworker.WithPodCgroups(m), podworker.WithGC(0, podsync.DefaultGCPolicy))
	pod := testPod("limited") // Guaranteed: every container 100m and 16Mi
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Resources = corev1.ResourceRequirements{Requests: limits, Limits: limits}
		}
	}
	other := testPod("other")
	for _, p := range []*corev1.Pod{pod, other} {
		if err := e.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("pods running", []types.UID{pod.UID, other.UID}, running)
	dir := "memory" + podCgroup(t, m, pod)
	// The sidecar and the two app containers run together: 48Mi.
	if v, err := tree.ReadFile(dir + "/memory.limit_in_bytes"); err != nil || v != "50331648" || dir != "memory/kubepods/poduid-limited" {
		t.Errorf("%s/memory.limit_in_bytes = %q, %v; want the Guaranteed pod's 48Mi", dir, v, err)
	}
	if !tree.Exists("cpu" + podCgroup(t, m, other)) {
		t.Errorf("no cgroup for %s", other.Name)
	}

	// An in-place resize of the containers resizes the pod's cgroup.
	resized := pod.DeepCopy()
	bigger := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	resized.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: bigger, Limits: bigger}
	if err := e.workers.Upsert(resized); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the pod cgroup resized", []types.UID{pod.UID}, func(podworker.PodState) bool {
		v, err := tree.ReadFile(dir + "/memory.limit_in_bytes")
		return err == nil && v == "67108864" // 16Mi + 16Mi + 32Mi
	})
	if err := e.workers.Delete(resized, nil); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod removed", []types.UID{pod.UID}, removed)
	if tree.Exists(dir) || tree.Exists("cpu"+podCgroup(t, m, pod)) {
		t.Errorf("%s's cgroup left after its removal", pod.Name)
	}
	e.workers.Close()

	// A new agent process that knows no pod: once its sources are ready,
	// other's containers and cgroup go.
	w2 := podworker.New(e.syncer, podworker.WithPodCgroups(m), podworker.WithGC(0, podsync.DefaultGCPolicy))
	defer w2.Close()
	w2.SourcesReady()
	if err := w2.CollectGarbage(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tree.Exists("cpu" + podCgroup(t, m, other)) {
		t.Errorf("the orphan's cgroup was not swept")
	}
}

// A cgroup that cannot be made fails the sync before anything starts.
func TestPodCgroupFailureStopsSync(t *testing.T) {
	e := newEnv(t, nil, podworker.WithPodCgroups(failingCgroups{}))
	pod := testPod("blocked")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("a failed sync", []types.UID{pod.UID}, func(st podworker.PodState) bool { return st.Err != nil })
	st, _ := e.workers.Status(pod.UID)
	if !errors.Is(st.Err, errNoCgroup) {
		t.Errorf("error %v, want the cgroup's", st.Err)
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != 0 {
		t.Errorf("%d sandboxes created without a pod cgroup", n)
	}
}

var errNoCgroup = errors.New("no cgroup for you")

type failingCgroups struct{}

func (failingCgroups) EnsurePod(context.Context, *corev1.Pod) error { return errNoCgroup }
func (failingCgroups) RemovePod(context.Context, *corev1.Pod) error { return nil }
func (failingCgroups) UpdatePod(context.Context, *corev1.Pod) error { return nil }
func (failingCgroups) PodCgroupConfig(context.Context, *corev1.Pod) (cgroups.ResourceConfig, error) {
	return cgroups.ResourceConfig{}, errNoCgroup
}
func (failingCgroups) RemoveOrphans(context.Context, func(types.UID) bool, func(types.UID) bool) ([]types.UID, error) {
	return nil, nil
}

// podCgroup is the pod's cgroup under the cgroupfs driver.
func podCgroup(t *testing.T, m *cgroups.Manager, pod *corev1.Pod) string {
	t.Helper()
	n, err := m.PodName(pod)
	if err != nil {
		t.Fatal(err)
	}
	return n.Cgroupfs()
}

// A pod resized before its container ever ran (its agent died between the
// sandbox and the container, or every start failed) has its pod cgroup
// resized before the next start, as kubelet v1.37.2 resizes it first for
// a starting container that was resized (startingResizedContainer): on
// cgroup v1 the kernel refuses a container CPU quota above its pod
// cgroup's, so a start after the resize could never succeed while the pod
// cgroup waited for a sync without error.
func TestResizedPodCgroupBeforeFirstStart(t *testing.T) {
	tree, m := memCgroups(t)
	e := newEnv(t, nil, podworker.WithPodCgroups(m))
	res := func(cpu string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("32Mi")},
		}
	}
	pod := testPod("resized")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	pod.Spec.Containers[0].Resources = res("100m")
	stop := e.fake.Fail("StartContainer", errors.New("cpu.cfs_quota_us: invalid argument"))
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	failed := func(st podworker.PodState) bool { return st.Result.Error() != nil }
	e.waitFor("a failed start", []types.UID{pod.UID}, failed)
	quota := "cpu" + podCgroup(t, m, pod) + "/cpu.cfs_quota_us"
	if v, err := tree.ReadFile(quota); err != nil || v != "10000" {
		t.Fatalf("%s = %q, %v; want 10000 (100m)", quota, v, err)
	}
	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources = res("200m")
	if err := e.workers.Upsert(resized); err != nil {
		t.Fatal(err)
	}
	// The starts still fail: the pod cgroup must not wait for one that
	// succeeds.
	e.waitFor("the pod cgroup resized before a start", []types.UID{pod.UID}, func(st podworker.PodState) bool {
		v, err := tree.ReadFile(quota)
		return failed(st) && err == nil && v == "20000"
	})
	stop()
	e.waitFor("the pod running", []types.UID{pod.UID}, running)
}

// A running container resized to a larger CPU limit finds its pod cgroup
// already grown: kubelet grows the pod cgroup before the containers.
// Growing it after a sync without error only would never come on cgroup
// v1, whose kernel refuses the container's quota above the pod's.
func TestPodCgroupGrowsBeforeContainerResize(t *testing.T) {
	tree, m := memCgroups(t)
	e := newEnv(t, nil, podworker.WithPodCgroups(m))
	res := func(cpu string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("32Mi")},
		}
	}
	pod := testPod("grows")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	pod.Spec.Containers[0].Resources = res("100m")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the pod running", []types.UID{pod.UID}, running)
	quota := "cpu" + podCgroup(t, m, pod) + "/cpu.cfs_quota_us"
	if v, err := tree.ReadFile(quota); err != nil || v != "10000" {
		t.Fatalf("%s = %q, %v; want 10000 (100m)", quota, v, err)
	}
	stop := e.fake.Fail("UpdateContainerResources", errors.New("cpu.cfs_quota_us: invalid argument"))
	defer stop()
	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources = res("200m")
	if err := e.workers.Upsert(resized); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the pod cgroup grown before the container's resize", []types.UID{pod.UID}, func(st podworker.PodState) bool {
		v, err := tree.ReadFile(quota)
		return st.Result.Error() != nil && err == nil && v == "20000"
	})
}
