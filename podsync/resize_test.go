package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func resizePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "shop", UID: "uid-rs", Generation: 1},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			}}},
		},
	}
}

// updateCalls returns the Linux resources of every UpdateContainerResources
// call, in order.
func updateCalls(h *harness) []*runtimeapi.LinuxContainerResources {
	var out []*runtimeapi.LinuxContainerResources
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.UpdateContainerResourcesRequest); ok {
			out = append(out, req.Linux)
		}
	}
	return out
}

func runningID(t *testing.T, h *harness, pod *corev1.Pod, name string) string {
	t.Helper()
	st, err := h.syncer.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cs := st.FindContainerStatusByName(name)
	if cs == nil || cs.State != podsync.ContainerStateRunning {
		t.Fatalf("%s not running: %+v", name, cs)
	}
	return cs.ID
}

// A running container's CPU limit goes up and down in place: one
// UpdateContainerResources each, the same instance, the runtime reports
// the new values, and a later sync (or a restarted Syncer) has nothing
// left to do.
func TestResizeInPlace(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			h := newHarness(t, tr.wire, nil)
			pod := resizePod()
			h.converge(pod, 3)
			id := runningID(t, h, pod, "app")
			for _, limit := range []string{"1500m", "250m"} {
				h.fake.ResetCalls()
				pod = pod.DeepCopy()
				pod.Generation++
				pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse(limit)
				r := h.sync(pod)
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
				calls := updateCalls(h)
				want := resource.MustParse(limit)
				if len(calls) != 1 || calls[0].CpuQuota != want.MilliValue()*100 || calls[0].CpuPeriod != 100000 || calls[0].MemoryLimitInBytes != 128<<20 {
					t.Fatalf("limit %s: update calls %v", limit, calls)
				}
				if got := runningID(t, h, pod, "app"); got != id {
					t.Fatalf("limit %s: container replaced (%s -> %s)", limit, id, got)
				}
				st, _ := h.syncer.Status(context.Background(), pod)
				if cs := st.FindContainerStatusByName("app"); cs.Resources == nil || cs.Resources.CPULimit.Cmp(want) != 0 {
					t.Fatalf("limit %s: runtime reports %+v", limit, cs.Resources)
				}
				if podsync.ResizeInProgress(pod, st) {
					t.Fatalf("limit %s: resize still in progress", limit)
				}
				if !h.ev.has("ResizeCompleted: Pod resize completed: {") {
					t.Fatalf("no ResizeCompleted event: %v", h.ev.list)
				}
				h.fake.ResetCalls()
				if r := h.sync(pod); len(r.Results) != 0 || len(updateCalls(h)) != 0 {
					t.Fatalf("limit %s: the next sync did %v", limit, r.Results)
				}
				h.restart()
				if r := h.sync(pod); len(r.Results) != 0 || len(updateCalls(h)) != 0 {
					t.Fatalf("limit %s: a restarted Syncer did %v", limit, r.Results)
				}
			}
		})
	}
}

// RestartContainer for memory: the container is killed and started again
// with the new limit, counted as a restart.
func TestResizeRestartContainerPolicy(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	h.converge(pod, 3)
	old := runningID(t, h, pod, "app")
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	h.fake.ResetCalls()
	if err := h.sync(pod).Error(); err != nil {
		t.Fatal(err)
	}
	if calls := updateCalls(h); len(calls) != 0 {
		t.Fatalf("updated in place: %v", calls)
	}
	id := runningID(t, h, pod, "app")
	if id == old {
		t.Fatal("not restarted")
	}
	resp, err := h.fake.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Status.Resources.GetLinux().GetMemoryLimitInBytes(); got != 256<<20 {
		t.Fatalf("memory limit %d", got)
	}
	st, _ := h.syncer.Status(context.Background(), pod)
	if cs := st.FindContainerStatusByName("app"); cs.RestartCount != 1 {
		t.Fatalf("restart count %d", cs.RestartCount)
	}
	if r := h.sync(pod); len(r.Results) != 0 {
		t.Fatalf("next sync did %v", r.Results)
	}
}

// A memory limit is not lowered below what the container uses (kubelet's
// validateMemoryResizeAction): the step fails, nothing is sent, and the
// resize goes through once the use falls.
func TestResizeMemoryBelowUsageRefused(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	h.converge(pod, 3)
	id := runningID(t, h, pod, "app")
	if err := h.fake.SetMemoryUsage(id, 100<<20); err != nil {
		t.Fatal(err)
	}
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("96Mi")
	h.fake.ResetCalls()
	r := h.sync(pod)
	if !errors.Is(r.Error(), podsync.ErrResizePodInPlace) {
		t.Fatalf("result %v", r.Error())
	}
	const want = `cannot decrease memory limits: attempting to set container "app" memory limit (100663296) below current usage (104857600)`
	if msg := r.Results[0].Message; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if calls := updateCalls(h); len(calls) != 0 {
		t.Fatalf("sent %v", calls)
	}
	if !h.ev.has("ResizeError: Pod resize error: {") || !strings.Contains(strings.Join(h.ev.list, "\n"), `"error":"cannot decrease memory limits`) {
		t.Fatalf("events %v", h.ev.list)
	}
	st, _ := h.syncer.Status(context.Background(), pod)
	if !podsync.ResizeInProgress(pod, st) {
		t.Fatal("resize not in progress")
	}
	if err := h.fake.SetMemoryUsage(id, 50<<20); err != nil {
		t.Fatal(err)
	}
	if err := h.sync(pod).Error(); err != nil {
		t.Fatal(err)
	}
	if calls := updateCalls(h); len(calls) != 1 || calls[0].MemoryLimitInBytes != 96<<20 {
		t.Fatalf("calls %v", calls)
	}
}

// bareRuntime hides the fake's optional abilities.
type bareRuntime struct{ runtime.Runtime }

// A runtime that cannot update resources gets a resize refused with an
// error that says so, never a resize silently skipped.
func TestResizeWithoutRuntimeSupport(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	h.converge(pod, 3)
	s := podsync.NewSyncer(bareRuntime{h.fake}, h.ims, h.opts...)
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
	st, err := s.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	r := s.SyncPod(context.Background(), pod, st, nil)
	if !errors.Is(r.Error(), podsync.ErrResizePodInPlace) || !errors.Is(r.Error(), runtime.ErrUnimplemented) {
		t.Fatalf("result %v", r.Error())
	}
	if !strings.Contains(r.Results[0].Message, "UpdateContainerResources") {
		t.Fatalf("message %q", r.Results[0].Message)
	}
}

// The record of what was applied lives in the pod directory, so it goes
// with RemovePod.
func TestResizeRecordRemovedWithPod(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	h.converge(pod, 3)
	file := filepath.Join(h.root, "pods", string(pod.UID), "actuated-resources")
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	st, _ := h.syncer.Status(context.Background(), pod)
	if err := h.syncer.KillPod(context.Background(), pod, st, nil).Error(); err != nil {
		t.Fatal(err)
	}
	if err := h.syncer.RemovePod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("record left: %v", err)
	}
}

// A sandbox config that cannot be made for a pod whose sandbox exists
// fails the sync as kubelet v1.37 does: only when a container is to start
// (its SyncPod builds the config lazily), then with SyncError
// "GeneratePodSandboxConfig for pod ... failed" and no ConfigPodSandbox
// step.
func TestSandboxConfigFailureIsSyncError(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	h.converge(pod, 3)
	pod = pod.DeepCopy()
	f := false
	pod.Spec.HostUsers = &f
	if r := h.sync(pod); r.SyncError != nil || len(r.Results) != 0 {
		t.Fatalf("nothing to start: sync error %v, steps %+v", r.SyncError, r.Results)
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
	r := h.sync(pod)
	if r.SyncError == nil || !errors.Is(r.SyncError, podsync.ErrConfigPodSandbox) ||
		!strings.HasPrefix(r.SyncError.Error(), `GeneratePodSandboxConfig for pod "rs_shop(uid-rs)" failed: `) {
		t.Fatalf("sync error %v", r.SyncError)
	}
	for _, sr := range r.Results {
		if sr.Action == podsync.ActionConfigPodSandbox || sr.Action == podsync.ActionStartContainer {
			t.Fatalf("step recorded: %+v", sr)
		}
	}
}

// Containers that have no record of what was applied (made by a podstart
// before records, or a damaged file) count as running their spec, as
// kubelet's actuated state starts from what it allocated: nothing is
// resized or restarted for that alone, and a later change still is.
func TestResizeRecordSeededFromSpec(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	h.converge(pod, 3)
	id := runningID(t, h, pod, "app")
	file := filepath.Join(h.root, "pods", string(pod.UID), "actuated-resources")
	for _, damage := range []func() error{
		func() error { return os.Remove(file) },
		func() error { return os.WriteFile(file, []byte("{"), 0o644) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		h.restart()
		h.fake.ResetCalls()
		if r := h.sync(pod); len(r.Results) != 0 || len(updateCalls(h)) != 0 {
			t.Fatalf("sync without a record did %v", r.Results)
		}
		if got := runningID(t, h, pod, "app"); got != id {
			t.Fatalf("restarted: %s -> %s", id, got)
		}
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("record not written again: %v", err)
		}
	}
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	if err := h.sync(pod).Error(); err != nil {
		t.Fatal(err)
	}
	if got := runningID(t, h, pod, "app"); got == id {
		t.Fatal("a memory change under RestartContainer did not restart after the record was seeded")
	}
}

// A pod without resources writes no record (a missing one counts as zero,
// and a resize cannot give a BestEffort pod resources), and restarting an
// unchanged container does not rewrite the record of one that has some:
// the file writes that made a fresh pod's sync twice the bare CRI calls.
func TestResizeRecordWrittenOnlyWhenItSaysSomething(t *testing.T) {
	h := newHarness(t, false, nil)
	bare := appPod("bare")
	h.converge(bare, 3)
	if _, err := os.Stat(filepath.Join(h.root, "pods", string(bare.UID), "actuated-resources")); !os.IsNotExist(err) {
		t.Fatalf("record for a pod without resources: %v", err)
	}
	pod := resizePod()
	h.converge(pod, 3)
	file := filepath.Join(h.root, "pods", string(pod.UID), "actuated-resources")
	before, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	id := runningID(t, h, pod, "app")
	if err := h.fake.ExitContainer(id, fake.Exit{Code: 1}); err != nil {
		t.Fatal(err)
	}
	h.converge(pod, 3)
	if runningID(t, h, pod, "app") == id {
		t.Fatal("the container was not restarted")
	}
	after, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("the record was rewritten for an unchanged container")
	}
}

// Kubelet v1.37 resizes running containers before it starts any (step 6
// of its SyncPod, before ephemeral, init and app containers): a sync that
// both resizes "app" and starts a new ephemeral container records the
// resize first.
func TestResizeBeforeStarts(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := resizePod()
	h.converge(pod, 3)
	pod = pod.DeepCopy()
	pod.Generation++
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1500m")
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
	r := h.sync(pod)
	if err := r.Error(); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, sr := range r.Results {
		order = append(order, fmt.Sprintf("%s %s", sr.Action, sr.Target))
	}
	if len(order) != 2 || !strings.HasPrefix(order[0], string(podsync.ActionResizePodInPlace)) || order[1] != string(podsync.ActionStartContainer)+" debug" {
		t.Fatalf("steps %v, want the resize, then the ephemeral container's start", order)
	}
}
