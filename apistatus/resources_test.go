package apistatus_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/podsync"
)

// TestConvertToAPIContainerStatusesForResources is kubelet v1.36.3's test
// of that name: a container status's Resources (what the runtime reports
// for a running container, the allocation otherwise) and
// AllocatedResources. Kubelet's test feeds the runtime's memory request
// too, which no CRI runtime reports (kubelet's toKubeContainerResources
// never sets it), so the instance here carries CPU limit, CPU request and
// memory limit; only "resizing Pod" changes for it, noted there.
func TestConvertToAPIContainerStatusesForResources(t *testing.T) {
	t.Parallel()
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	cpu1mem1 := list("cpu", "1", "memory", "1Gi")
	cpu2mem2 := list("cpu", "2", "memory", "2Gi")
	cpu1mem1st := list("cpu", "1", "memory", "1Gi", "ephemeral-storage", "2Gi", "storage", "2Gi")
	cpu2mem2st := list("cpu", "2", "memory", "2Gi", "ephemeral-storage", "2Gi", "storage", "2Gi")
	extended := func(l corev1.ResourceList) corev1.ResourceList {
		l = l.DeepCopy()
		for _, n := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
			if _, ok := l[n]; !ok {
				l[n] = resource.MustParse("0")
			}
		}
		l["dummy.io/dummy"] = resource.MustParse("1")
		return l
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	req := func(l, r corev1.ResourceList) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Limits: l, Requests: r}
	}
	cases := []struct {
		name      string
		state     podsync.ContainerState // "": running
		resources corev1.ResourceRequirements
		allocated *corev1.ResourceRequirements // nil: resources
		actual    *podsync.ContainerResources  // nil: from resources
		actuated  *podsync.ResourceValues      // podsync's record of what was applied; nil: none
		old       corev1.ContainerStatus
		wantAlloc corev1.ResourceList
		wantRes   *corev1.ResourceRequirements
	}{
		{name: "GuaranteedQoSPod with CPU and memory CRI status", resources: *req(cpu1mem1, cpu1mem1),
			old: corev1.ContainerStatus{State: running, Resources: req(cpu1mem1, cpu1mem1)}, wantAlloc: cpu1mem1, wantRes: req(cpu1mem1, cpu1mem1)},
		{name: "BurstableQoSPod with CPU and memory CRI status", resources: *req(cpu1mem1, cpu1mem1),
			old: corev1.ContainerStatus{State: running, Resources: req(cpu2mem2, cpu1mem1)}, wantAlloc: cpu1mem1, wantRes: req(cpu1mem1, cpu1mem1)},
		{name: "BurstableQoSPod without CPU", resources: corev1.ResourceRequirements{Requests: list("memory", "100M")},
			actual:    &podsync.ContainerResources{CPURequest: resource.NewMilliQuantity(2, resource.DecimalSI)},
			old:       corev1.ContainerStatus{State: running, Resources: &corev1.ResourceRequirements{Requests: list("memory", "100M")}},
			wantAlloc: list("memory", "100M"), wantRes: &corev1.ResourceRequirements{Requests: list("memory", "100M")}},
		{name: "BurstableQoSPod with below min CPU", resources: *req(list("cpu", "5m"), list("memory", "100M", "cpu", "1m")),
			actual:    &podsync.ContainerResources{CPURequest: resource.NewMilliQuantity(2, resource.DecimalSI), CPULimit: resource.NewMilliQuantity(10, resource.DecimalSI)},
			old:       corev1.ContainerStatus{State: running, Resources: req(list("cpu", "5m"), list("memory", "100M", "cpu", "1m"))},
			wantAlloc: list("memory", "100M", "cpu", "1m"), wantRes: req(list("cpu", "5m"), list("memory", "100M", "cpu", "1m"))},
		{name: "GuaranteedQoSPod with CPU and memory CRI status, with ephemeral storage", resources: *req(cpu1mem1st, cpu1mem1st),
			old: corev1.ContainerStatus{State: running, Resources: req(cpu1mem1, cpu1mem1)}, wantAlloc: cpu1mem1st, wantRes: req(cpu1mem1st, cpu1mem1st)},
		{name: "BurstableQoSPod with CPU and memory CRI status, with ephemeral storage", resources: *req(cpu1mem1st, cpu1mem1st),
			old: corev1.ContainerStatus{State: running, Resources: req(cpu2mem2st, cpu2mem2st)}, wantAlloc: cpu1mem1st, wantRes: req(cpu1mem1st, cpu1mem1st)},
		{name: "BurstableQoSPod with CPU and memory CRI status, with ephemeral storage, nil resources in OldStatus", resources: *req(cpu1mem1st, cpu1mem1st),
			old: corev1.ContainerStatus{State: running}, wantAlloc: cpu1mem1st, wantRes: req(cpu1mem1st, cpu1mem1st)},
		{name: "BestEffortQoSPod", old: corev1.ContainerStatus{State: running, Resources: &corev1.ResourceRequirements{}}, wantRes: &corev1.ResourceRequirements{}},
		{name: "BestEffort QoSPod with extended resources", resources: corev1.ResourceRequirements{Requests: extended(corev1.ResourceList{})},
			old: corev1.ContainerStatus{State: running, Resources: &corev1.ResourceRequirements{}}, wantAlloc: extended(corev1.ResourceList{}), wantRes: &corev1.ResourceRequirements{Requests: extended(corev1.ResourceList{})}},
		{name: "BurstableQoSPod with extended resources", resources: corev1.ResourceRequirements{Requests: extended(cpu1mem1)},
			old: corev1.ContainerStatus{State: running, Resources: &corev1.ResourceRequirements{}}, wantAlloc: extended(cpu1mem1), wantRes: &corev1.ResourceRequirements{Requests: extended(cpu1mem1)}},
		{name: "BurstableQoSPod with storage, ephemeral storage and extended resources", resources: corev1.ResourceRequirements{Requests: extended(cpu1mem1st)},
			old: corev1.ContainerStatus{State: running, Resources: &corev1.ResourceRequirements{}}, wantAlloc: extended(cpu1mem1st), wantRes: &corev1.ResourceRequirements{Requests: extended(cpu1mem1st)}},
		{name: "GuaranteedQoSPod with extended resources", resources: *req(extended(cpu1mem1), extended(cpu1mem1)),
			old: corev1.ContainerStatus{State: running, Resources: &corev1.ResourceRequirements{}}, wantAlloc: extended(cpu1mem1), wantRes: req(extended(cpu1mem1), extended(cpu1mem1))},
		{name: "newly created Pod", state: podsync.ContainerStateCreated, resources: *req(cpu1mem1st, cpu1mem1st),
			wantAlloc: cpu1mem1st, wantRes: req(cpu1mem1st, cpu1mem1st)},
		{name: "newly running Pod", resources: *req(cpu1mem1st, cpu1mem1st),
			old: corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}, wantAlloc: cpu1mem1st, wantRes: req(cpu1mem1st, cpu1mem1st)},
		{name: "newly terminated Pod", state: podsync.ContainerStateExited, resources: *req(cpu1mem1st, cpu1mem1st), allocated: req(cpu2mem2st, cpu2mem2st),
			old: corev1.ContainerStatus{State: running, Resources: req(cpu1mem1st, cpu1mem1st)}, wantAlloc: cpu2mem2st, wantRes: req(cpu2mem2st, cpu2mem2st)},
		// Kubelet's test expects the memory request the runtime reports
		// (1Gi); no runtime reports one, so the allocation's (2Gi) stays.
		{name: "resizing Pod", resources: *req(cpu1mem1st, cpu1mem1st), allocated: req(cpu2mem2st, cpu2mem2st),
			old: corev1.ContainerStatus{State: running, Resources: req(cpu1mem1st, cpu1mem1st)}, wantAlloc: cpu2mem2st,
			wantRes: req(cpu1mem1st, list("cpu", "1", "memory", "2Gi", "ephemeral-storage", "2Gi", "storage", "2Gi"))},
		// Kubelet's toKubeContainerStatus takes the memory request from the
		// actuated resources (CRI carries none): after an in-place resize
		// of the memory request from 1Gi to 2Gi, applied, the status says
		// 2Gi, not the last status's 1Gi. Found by the conformance specs
		// "Pod InPlace Resize" (containerStatuses[].resources.requests.memory).
		{name: "resized in place: memory request as actuated", resources: *req(cpu2mem2, cpu2mem2), allocated: req(cpu2mem2, cpu2mem2),
			actuated: &podsync.ResourceValues{CPULimit: 2000, CPURequest: 2000, MemoryLimit: 2 << 30, MemoryRequest: 2 << 30},
			old:      corev1.ContainerStatus{State: running, ContainerID: "containerd://ctr0", Resources: req(cpu2mem2, cpu1mem1)}, wantAlloc: cpu2mem2, wantRes: req(cpu2mem2, cpu2mem2)},
		{name: "runtime reports nothing: memory request as actuated, the rest kept", resources: *req(cpu2mem2, cpu2mem2), allocated: req(cpu2mem2, cpu2mem2),
			actual:   &podsync.ContainerResources{},
			actuated: &podsync.ResourceValues{CPULimit: 1000, CPURequest: 1000, MemoryLimit: 1 << 30, MemoryRequest: 1 << 30},
			old:      corev1.ContainerStatus{State: running, ContainerID: "containerd://ctr0", Resources: req(cpu2mem2, cpu2mem2)}, wantAlloc: cpu2mem2, wantRes: req(cpu2mem2, corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": *resource.NewQuantity(1<<30, resource.BinarySI)})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			spec := c.resources
			if c.allocated != nil {
				spec = *c.allocated
			}
			pod.Spec.Containers = []corev1.Container{{Name: "ctr0", Image: "img", Resources: *spec.DeepCopy()}}
			actual := c.actual
			if actual == nil {
				actual = &podsync.ContainerResources{CPULimit: c.resources.Limits.Cpu(), MemoryLimit: c.resources.Limits.Memory(), CPURequest: c.resources.Requests.Cpu()}
			}
			state := c.state
			if state == "" {
				state = podsync.ContainerStateRunning
			}
			old := c.old
			old.Name, old.Image, old.ImageID = "ctr0", "img", "img1234"
			rs := &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "ctr0", Name: "ctr0", Image: "img", ImageRef: "img1234",
				State: state, StartedAt: genNow, FinishedAt: genNow, Resources: actual}}}
			if c.actuated != nil {
				rs.ActuatedResources = map[string]podsync.ResourceValues{"ctr0": *c.actuated}
			}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Previous: &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{old}}, Now: genNow})
			got := s.ContainerStatuses[0]
			if d := diff(c.wantAlloc, got.AllocatedResources); d != "" {
				t.Errorf("AllocatedResources:\n%s", d)
			}
			if d := diff(c.wantRes, got.Resources); d != "" {
				t.Errorf("Resources:\n%s", d)
			}
			if got.ContainerID != "containerd://ctr0" || got.Image != "img" || got.ImageID != "img1234" {
				t.Errorf("ID %q image %q image ID %q", got.ContainerID, got.Image, got.ImageID)
			}
		})
	}
}

// Pod-level Resources and AllocatedResources as kubelet v1.36.3 reported
// them beside podstart in examples/nodeagent's side-by-side test (a
// BestEffort pod: empty; two containers of 100m/32Mi, one with limits
// only, which the API server copies to requests), plus sidecars (the
// sidecar KEP's formula) and pod-level requests, which win.
func TestPodLevelResources(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	list := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem)}
	}
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name            string
		spec            corev1.PodSpec
		requests, limit corev1.ResourceList
	}{
		{name: "best effort", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
			requests: corev1.ResourceList{}, limit: corev1.ResourceList{}},
		{name: "two containers", spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "32Mi"), Limits: list("100m", "32Mi")}},
			{Name: "done", Resources: corev1.ResourceRequirements{Requests: list("100m", "32Mi"), Limits: list("100m", "32Mi")}}}},
			requests: list("200m", "64Mi"), limit: list("200m", "64Mi")},
		{name: "init container's peak and a sidecar", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", Resources: corev1.ResourceRequirements{Requests: list("500m", "10Mi")}},
				{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: list("100m", "20Mi")}}},
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "32Mi")}}}},
			requests: list("500m", "52Mi"), limit: corev1.ResourceList{}},
		{name: "pod-level requests", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: list("1", "1Gi"), Limits: list("2", "2Gi")},
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "32Mi")}}}},
			requests: list("1", "1Gi"), limit: list("2", "2Gi")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: c.spec}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{}})
			if s.Resources == nil || s.Resources.Requests == nil || s.Resources.Limits == nil {
				t.Fatalf("resources %+v, want non-nil requests and limits (kubelet's {} for a pod without any)", s.Resources)
			}
			for name, m := range map[string][2]corev1.ResourceList{
				"requests": {s.Resources.Requests, c.requests}, "limits": {s.Resources.Limits, c.limit}, "allocated": {s.AllocatedResources, c.requests},
			} {
				got, want := m[0], m[1]
				if len(got) != len(want) {
					t.Errorf("%s %v, want %v", name, got, want)
				}
				for k, v := range want {
					if g := got[k]; g.Cmp(v) != 0 {
						t.Errorf("%s %s = %s, want %s", name, k, g.String(), v.String())
					}
				}
			}
		})
	}
}

// Kubelet v1.37.2's Test_generateAPIPodStatus case "InPlacePodLevelResources
// VerticalScaling enabled, succeeded pod": a terminal pod with pod-level
// requests reports them as its Resources and AllocatedResources, and no
// limits (kubelet's {}).
func TestPodLevelResourcesSucceededPod(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	list := corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("100Mi")}
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Resources: &corev1.ResourceRequirements{Requests: list},
			Containers: []corev1.Container{{Name: "containerA", Resources: corev1.ResourceRequirements{Requests: list}}}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded},
	}
	rs := &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "c1", Name: "containerA", State: podsync.ContainerStateExited}}}
	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Previous: &pod.Status, Terminal: true})
	if s.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded", s.Phase)
	}
	if s.Resources == nil || len(s.Resources.Limits) != 0 || s.Resources.Limits == nil || len(s.Resources.Requests) != 2 ||
		s.Resources.Requests.Cpu().Cmp(q("100m")) != 0 || s.Resources.Requests.Memory().Cmp(q("100Mi")) != 0 {
		t.Fatalf("resources %+v, want requests 100m/100Mi and limits {}", s.Resources)
	}
	if len(s.AllocatedResources) != 2 || s.AllocatedResources.Cpu().Cmp(q("100m")) != 0 {
		t.Fatalf("allocated %v", s.AllocatedResources)
	}
}

// Pod-level Resources once the API server has the pod Running, as kubelet
// v1.37.2's convertToAPIPodLevelResourcesStatus makes them without a pod
// cgroup to read (cgroupsPerQOS false, how examples/nodeagent's kubelet
// runs beside podstart): the spec's pod-level values, a memory request
// from the containers', and the previous status's CPU request and limits
// only while that status is Running too. The first case is kubelet's
// Test_generateAPIPodStatus "running pod"; the OOM-killed pod is the one
// the side-by-side test showed with requests only.
func TestPodLevelResourcesRunningPath(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = q(kv[i+1])
		}
		return l
	}
	full := &corev1.ResourceRequirements{Requests: list("cpu", "100m", "memory", "16Mi"), Limits: list("cpu", "200m", "memory", "16Mi")}
	limited := corev1.Container{Name: "hog", Resources: corev1.ResourceRequirements{
		Requests: list("cpu", "100m", "memory", "16Mi"), Limits: list("cpu", "200m", "memory", "16Mi")}}
	cases := []struct {
		name             string
		spec             corev1.PodSpec
		apiPhase         corev1.PodPhase
		previous         *corev1.PodStatus
		requests, limits corev1.ResourceList
		runtime          *podsync.PodStatus // nil: nothing on the runtime
	}{{
		name: "kubelet's running pod: the spec's pod-level values",
		spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: list("cpu", "100m", "memory", "100Mi"), Limits: list("cpu", "200m", "memory", "200Mi")},
			Containers: []corev1.Container{{Name: "containerA", Resources: corev1.ResourceRequirements{Requests: list("cpu", "100m", "memory", "100Mi"), Limits: list("cpu", "200m", "memory", "200Mi")}}}},
		apiPhase: corev1.PodRunning,
		requests: list("cpu", "100m", "memory", "100Mi"), limits: list("cpu", "200m", "memory", "200Mi"),
	}, {
		name: "not yet Running at the API server: effective requests and limits",
		spec: corev1.PodSpec{Containers: []corev1.Container{limited}}, apiPhase: corev1.PodPending,
		requests: list("cpu", "100m", "memory", "16Mi"), limits: list("cpu", "200m", "memory", "16Mi"),
	}, {
		name: "running, previous status Running: its values kept",
		spec: corev1.PodSpec{Containers: []corev1.Container{limited}}, apiPhase: corev1.PodRunning,
		previous: &corev1.PodStatus{Phase: corev1.PodRunning, Resources: full},
		requests: list("cpu", "100m", "memory", "16Mi"), limits: list("cpu", "200m", "memory", "16Mi"),
	}, {
		name: "ended (previous status Failed): the memory request alone",
		spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{limited}}, apiPhase: corev1.PodRunning,
		previous: &corev1.PodStatus{Phase: corev1.PodFailed, Resources: full},
		requests: list("memory", "16Mi"), limits: list(),
	}, {
		name: "ends in this status, previous Running: nothing kept, as kubelet's terminating sync leaves it",
		spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{limited}}, apiPhase: corev1.PodRunning,
		previous: &corev1.PodStatus{Phase: corev1.PodRunning, Resources: full},
		runtime:  &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "c1", Name: "hog", State: podsync.ContainerStateExited, ExitCode: 137, Reason: "OOMKilled"}}},
		requests: list("memory", "16Mi"), limits: list(),
	}, {
		name: "ends before the API server has it Running: what kubelet's terminating sync leaves",
		spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{limited}}, apiPhase: corev1.PodPending,
		runtime:  &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "c1", Name: "hog", State: podsync.ContainerStateExited, ExitCode: 137, Reason: "OOMKilled"}}},
		requests: list("memory", "16Mi"), limits: list(),
	}, {
		name: "ended with pod-level resources: the spec's kept",
		spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Resources:  &corev1.ResourceRequirements{Requests: list("cpu", "100m", "memory", "32Mi"), Limits: list("cpu", "200m", "memory", "64Mi")},
			Containers: []corev1.Container{{Name: "once"}}}, apiPhase: corev1.PodRunning,
		previous: &corev1.PodStatus{Phase: corev1.PodSucceeded},
		requests: list("cpu", "100m", "memory", "32Mi"), limits: list("cpu", "200m", "memory", "64Mi"),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: c.spec, Status: corev1.PodStatus{Phase: c.apiPhase}}
			rs := c.runtime
			if rs == nil {
				rs = &podsync.PodStatus{}
			}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Previous: c.previous})
			if s.Resources == nil || s.Resources.Requests == nil || s.Resources.Limits == nil {
				t.Fatalf("resources %+v, want non-nil requests and limits", s.Resources)
			}
			for name, m := range map[string][2]corev1.ResourceList{"requests": {s.Resources.Requests, c.requests}, "limits": {s.Resources.Limits, c.limits}} {
				got, want := m[0], m[1]
				if len(got) != len(want) {
					t.Errorf("%s %v, want %v", name, got, want)
				}
				for k, v := range want {
					if g := got[k]; g.Cmp(v) != 0 {
						t.Errorf("%s %s = %s, want %s", name, k, g.String(), v.String())
					}
				}
			}
		})
	}
}

// Kubelet v1.37.2's TestConvertToAPIPodLevelResourcesStatus: with pod
// cgroups, a Running pod's CPU request is the cgroup's shares unless they
// are the allocated request's v2 round trip; plus the memory limit of a
// BestEffort pod's cgroup (none: the page-rounded maximum), as kubelet
// with pod cgroups reports it.
func TestPodLevelResourcesFromPodCgroup(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	u64 := func(v uint64) *uint64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name          string
		requests      corev1.ResourceList
		cgroup        cgroups.ResourceConfig
		wantMilliCPU  int64
		wantMemLimit  string
		wantCPULimit  string
		bestEffortPod bool
	}{
		{name: "preserve allocated request for lossy v2 roundtrip readback", requests: corev1.ResourceList{corev1.ResourceCPU: q("50m"), corev1.ResourceMemory: q("50Mi")},
			cgroup: cgroups.ResourceConfig{CPUShares: u64(28), CPUPeriod: u64(100000), CPUQuota: i64(0)}, wantMilliCPU: 50, wantMemLimit: "100Mi", wantCPULimit: "100m"},
		{name: "use actuated request when readback is not a v2 roundtrip", requests: corev1.ResourceList{corev1.ResourceCPU: q("50m"), corev1.ResourceMemory: q("50Mi")},
			cgroup: cgroups.ResourceConfig{CPUShares: u64(102), CPUPeriod: u64(100000), CPUQuota: i64(0)}, wantMilliCPU: 100, wantMemLimit: "100Mi", wantCPULimit: "100m"},
		{name: "quota and memory limit read back", requests: corev1.ResourceList{corev1.ResourceCPU: q("50m"), corev1.ResourceMemory: q("50Mi")},
			cgroup: cgroups.ResourceConfig{CPUShares: u64(51), CPUPeriod: u64(100000), CPUQuota: i64(20000), Memory: i64(200 << 20)}, wantMilliCPU: 50, wantMemLimit: "200Mi", wantCPULimit: "200m"},
		{name: "a BestEffort pod's unlimited cgroup", bestEffortPod: true,
			cgroup: cgroups.ResourceConfig{CPUShares: u64(2), CPUPeriod: u64(100000), CPUQuota: i64(-1), Memory: i64(9223372036854771712)}, wantMilliCPU: 0, wantMemLimit: "9007199254740988Ki"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			if !c.bestEffortPod {
				pod.Spec.Resources = &corev1.ResourceRequirements{Requests: c.requests,
					Limits: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("100Mi")}}
			}
			cg := c.cgroup
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{}, PodCgroup: &cg})
			if s.Resources == nil {
				t.Fatal("no pod-level resources")
			}
			if got := s.Resources.Requests.Cpu().MilliValue(); got != c.wantMilliCPU {
				t.Errorf("CPU request %dm, want %dm", got, c.wantMilliCPU)
			}
			if got := s.Resources.Limits[corev1.ResourceMemory]; got.String() != c.wantMemLimit {
				t.Errorf("memory limit %s, want %s", got.String(), c.wantMemLimit)
			}
			if got, ok := s.Resources.Limits[corev1.ResourceCPU]; ok != (c.wantCPULimit != "") || ok && got.String() != c.wantCPULimit {
				t.Errorf("CPU limit %s (%v), want %q", got.String(), ok, c.wantCPULimit)
			}
		})
	}
}

// A pod whose containers have all ended reports no pod cgroup value in
// its pod-level Resources, even while its cgroup can still be read: the
// status kubelet v1.37.2 leaves for it (5 of 5 such pods side by side with
// kubelet and pod cgroups, issue 36) has the spec's pod-level values and
// the containers' memory request, no limits from the cgroup. A Running pod
// still reads them (TestPodLevelResourcesFromPodCgroup).
func TestPodLevelResourcesEndedPodIgnoresCgroup(t *testing.T) {
	t.Parallel()
	u64 := func(v uint64) *uint64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	for _, bestEffort := range []bool{true, false} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "once"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		cg := cgroups.ResourceConfig{CPUShares: u64(2), CPUPeriod: u64(100000), CPUQuota: i64(-1), Memory: i64(9223372036854771712)}
		if !bestEffort {
			pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}}
			cg = cgroups.ResourceConfig{CPUShares: u64(2), CPUPeriod: u64(100000), CPUQuota: i64(-1), Memory: i64(16 << 20)}
		}
		rs := &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "c1", Name: "once", State: podsync.ContainerStateExited, ExitCode: 137}}}
		prev := &corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "once", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Previous: prev, PodCgroup: &cg})
		if s.Phase != corev1.PodFailed {
			t.Fatalf("phase %s, want Failed", s.Phase)
		}
		if s.Resources == nil || len(s.Resources.Limits) != 0 {
			t.Errorf("best effort %v: pod-level resources %+v, want no limits", bestEffort, s.Resources)
		}
		if !bestEffort && s.Resources.Requests.Memory().Cmp(resource.MustParse("16Mi")) != 0 {
			t.Errorf("memory request %s, want the container's 16Mi", s.Resources.Requests.Memory())
		}
	}
}
