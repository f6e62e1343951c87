package apistatus

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podsync"
)

type converter struct {
	pod     *corev1.Pod
	rs      *podsync.PodStatus
	reasons map[string]Reason
	runtime string
	hasInit bool
}

func (c *converter) id(raw string) string { return c.runtime + "://" + raw }

// convert is kubelet's convertContainerStatus: one runtime instance as an
// API container status.
func (c *converter) convert(cs *podsync.ContainerStatus, old *corev1.ContainerStatus) *corev1.ContainerStatus {
	cid := c.id(cs.ID)
	s := &corev1.ContainerStatus{Name: cs.Name, RestartCount: int32(cs.RestartCount), Image: cs.Image, ImageID: cs.ImageRef, ContainerID: cid}
	if old != nil {
		s.VolumeMounts = old.VolumeMounts
		// RestartAllContainersOnContainerExits keeps the larger count and
		// the last termination across an in-place restart of all.
		if old.RestartCount > s.RestartCount {
			s.RestartCount = old.RestartCount
		}
		if old.ContainerID != s.ContainerID && old.State.Terminated != nil {
			s.LastTerminationState.Terminated = old.State.Terminated
		} else if old.LastTerminationState.Terminated != nil {
			s.LastTerminationState.Terminated = old.LastTerminationState.Terminated
		}
	}
	switch cs.State {
	case podsync.ContainerStateRunning:
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
		if old != nil && old.State.Terminated != nil && old.RestartCount >= int32(cs.RestartCount) {
			s.RestartCount = old.RestartCount + 1
		}
	case podsync.ContainerStateCreated:
		s.State.Waiting = &corev1.ContainerStateWaiting{}
	case podsync.ContainerStateExited:
		s.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: int32(cs.ExitCode), Reason: cs.Reason, Message: cs.Message,
			StartedAt: metav1.NewTime(cs.StartedAt), FinishedAt: metav1.NewTime(cs.FinishedAt), ContainerID: cid,
		}
	default:
		if cs.State == podsync.ContainerStateUnknown && old != nil && old.State.Running != nil {
			s.State.Terminated = &corev1.ContainerStateTerminated{
				Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated", ExitCode: 137,
			}
			s.RestartCount = old.RestartCount + 1
		} else {
			s.State.Waiting = &corev1.ContainerStateWaiting{}
		}
	}
	return s
}

// statuses is kubelet's convertToAPIContainerStatuses.
func (c *converter) statuses(previous []corev1.ContainerStatus, containers []corev1.Container, isInit bool) []corev1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	olds := make(map[string]corev1.ContainerStatus, len(previous))
	for _, s := range previous {
		olds[s.Name] = s
	}
	defaultWaiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ContainerCreating}}
	if c.hasInit {
		defaultWaiting = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: PodInitializing}}
	}
	statuses := make(map[string]*corev1.ContainerStatus, len(containers))
	specs := make(map[string]*corev1.Container, len(containers))
	for i := range containers {
		specs[containers[i].Name] = &containers[i]
	}
	for i := range containers {
		ct := &containers[i]
		s := &corev1.ContainerStatus{Name: ct.Name, Image: ct.Image, State: *defaultWaiting.DeepCopy()}
		for _, vm := range ct.VolumeMounts {
			vs := corev1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
			if vm.ReadOnly {
				mode := corev1.RecursiveReadOnlyDisabled
				if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled {
					mode = corev1.RecursiveReadOnlyEnabled
				}
				vs.RecursiveReadOnly = &mode
			}
			s.VolumeMounts = append(s.VolumeMounts, vs)
		}
		if old, ok := olds[ct.Name]; ok {
			if old.State.Terminated != nil {
				cp := *old.DeepCopy()
				s = &cp
			} else {
				s.RestartCount = old.RestartCount
				s.LastTerminationState = *old.LastTerminationState.DeepCopy()
			}
		}
		statuses[ct.Name] = s
	}

	// A container that was running and is gone from the runtime.
	for i := range containers {
		ct := &containers[i]
		if c.rs.FindContainerStatusByName(ct.Name) != nil {
			continue
		}
		old, ok := olds[ct.Name]
		if !ok || old.State.Terminated != nil || old.State.Running == nil {
			continue
		}
		s := statuses[ct.Name]
		reason := ContainerCreating
		if c.hasInit {
			reason = PodInitializing
		}
		if s.State.Waiting == nil || s.State.Waiting.Reason != reason || s.LastTerminationState.Terminated != nil {
			continue
		}
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
			Reason: "ContainerStatusUnknown", ExitCode: 137,
			Message: "The container could not be located when the pod was deleted.  The container used to be Running",
		}
		if c.pod.DeletionTimestamp == nil {
			s.RestartCount++
		}
	}

	// The newest instance is the state, the one before it the last state.
	instances := append([]*podsync.ContainerStatus(nil), c.rs.ContainerStatuses...)
	sort.SliceStable(instances, func(i, j int) bool { return instances[i].CreatedAt.After(instances[j].CreatedAt) })
	seen := map[string]int{}
	for _, cs := range instances {
		if _, ok := statuses[cs.Name]; !ok || seen[cs.Name] >= 2 {
			continue
		}
		var oldp *corev1.ContainerStatus
		if old, ok := olds[cs.Name]; ok {
			oldp = &old
		}
		s := c.convert(cs, oldp)
		if cs.State == podsync.ContainerStateRunning && oldp != nil && oldp.Started != nil {
			started := *oldp.Started
			s.Started = &started
		}
		if spec := specs[cs.Name]; spec != nil {
			var act *podsync.ResourceValues
			if v, ok := c.rs.ActuatedResources[cs.Name]; ok {
				act = &v
			}
			s.Resources = statusResources(spec, s, cs, oldp, act)
			s.AllocatedResources = spec.Resources.Requests
		}
		// SupplementalGroupsPolicy (GA): the runtime's view of the user.
		s.User = containerUser(cs.User)
		if seen[cs.Name] == 0 {
			statuses[cs.Name] = s
		} else {
			statuses[cs.Name].LastTerminationState = s.State
		}
		seen[cs.Name]++
	}

	// Waiting reasons from the last start failure.
	for i := range containers {
		ct := &containers[i]
		if isInit {
			latest := c.rs.FindContainerStatusByName(ct.Name)
			if latest != nil && latest.State == podsync.ContainerStateExited && latest.ExitCode == 0 {
				continue
			}
			if latest == nil && !podsync.IsRestartableInitContainer(ct) && anyRegularCreated(c.pod, c.rs) && statuses[ct.Name].State.Waiting != nil {
				statuses[ct.Name].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Completed", ExitCode: 0,
					Message: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
				}}
				continue
			}
		}
		if !podsync.ShouldContainerBeRestarted(ct, c.pod, c.rs) {
			continue
		}
		r, ok := c.reasons[ct.Name]
		if !ok || r.Err == nil {
			continue
		}
		s := statuses[ct.Name]
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
		}
		s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r.Err.Error(), Message: r.Message}}
	}

	out := make([]corev1.ContainerStatus, 0, len(statuses))
	for i := range containers {
		out = append(out, *statuses[containers[i].Name])
	}
	if !isInit {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	}
	return out
}

// anyRegularCreated is kubelet's HasAnyRegularContainerCreated: an app
// container instance exists in a state other than unknown.
func anyRegularCreated(pod *corev1.Pod, rs *podsync.PodStatus) bool {
	for _, c := range pod.Spec.Containers {
		if cs := rs.FindContainerStatusByName(c.Name); cs != nil && cs.State != podsync.ContainerStateUnknown {
			return true
		}
	}
	return false
}

// updateProbeStatus is kubelet's prober manager UpdatePodStatus: started
// from the startup probe (or its absence), ready from the readiness probe
// (or its absence) for running started containers; a regular init
// container is ready once it exited 0.
func updateProbeStatus(pod *corev1.Pod, s *corev1.PodStatus, p Probes, proberStart time.Time) {
	started := func(st *corev1.ContainerStatus, spec *corev1.Container) bool {
		if st.State.Running == nil {
			return false
		}
		if p != nil {
			if r, ok := p.Startup(rawID(st.ContainerID)); ok {
				return r == podsync.ProbeSuccess
			}
		}
		if st.Started != nil && *st.Started {
			return true
		}
		return spec == nil || spec.StartupProbe == nil
	}
	ready := func(st *corev1.ContainerStatus, spec *corev1.Container) bool {
		if st.State.Running == nil {
			return false
		}
		if p == nil {
			return spec == nil || spec.ReadinessProbe == nil
		}
		r, probed := p.Readiness(rawID(st.ContainerID))
		if probed && r == podsync.ProbeSuccess {
			return true
		}
		if spec == nil || spec.ReadinessProbe == nil {
			return true
		}
		// Kubelet's setReadyStateOnKubeletRestart (ChangeContainerStatusOnKubeletRestart
		// deprecated, off by default in v1.36 and v1.37): a container running since before the
		// prober started (less a 10 s grace) and not yet probed keeps the
		// readiness of a pod the API server has Ready, so an agent restart
		// does not flap it.
		if !probed && !proberStart.IsZero() && st.State.Running.StartedAt.Time.Before(proberStart.Add(-10*time.Second)) {
			return hasTrueCondition(pod.Status.Conditions, corev1.PodReady)
		}
		return false
	}
	find := func(list []corev1.Container, name string) *corev1.Container {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	for i := range s.ContainerStatuses {
		st := &s.ContainerStatuses[i]
		spec := find(pod.Spec.Containers, st.Name)
		on := started(st, spec)
		st.Started = &on
		if on {
			st.Ready = ready(st, spec)
		}
	}
	for i := range s.InitContainerStatuses {
		st := &s.InitContainerStatuses[i]
		spec := find(pod.Spec.InitContainers, st.Name)
		on := started(st, spec)
		st.Started = &on
		if spec == nil {
			continue
		}
		if !podsync.IsRestartableInitContainer(spec) {
			if st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 {
				st.Ready = true
			}
			continue
		}
		if on {
			st.Ready = ready(st, spec)
		}
	}
}

// rawID strips "<runtime>://".
func rawID(id string) string {
	for i := 0; i+2 < len(id); i++ {
		if id[i] == ':' && id[i+1] == '/' && id[i+2] == '/' {
			return id[i+3:]
		}
	}
	return id
}

// statusResources is kubelet's convertContainerStatusResources: the spec's
// resources (what was allocated), with the CPU and memory a running
// instance has in their place; a value it does not have keeps what the
// last status said for the same running instance. What the instance has
// is kubelet's toKubeContainerStatus: the runtime's report (CPU, memory
// limit), the memory request (which CRI does not carry) from the
// resources last actuated (act, podsync's records: as started, or as
// resized in place), and all four from them when the runtime reports none.
func statusResources(spec *corev1.Container, s *corev1.ContainerStatus, cs *podsync.ContainerStatus, old *corev1.ContainerStatus, act *podsync.ResourceValues) *corev1.ResourceRequirements {
	if cs.State != podsync.ContainerStateRunning {
		return spec.Resources.DeepCopy()
	}
	var oldRes corev1.ResourceRequirements
	if old != nil && old.Resources != nil {
		oldRes = *old.Resources
	}
	keep := func(name corev1.ResourceName, from, to corev1.ResourceList) {
		if old != nil && old.State.Running != nil && s.ContainerID == old.ContainerID && from != nil {
			if q, ok := from[name]; ok {
				to[name] = q.DeepCopy()
			}
		}
	}
	res := spec.Resources.DeepCopy()
	r := cs.Resources
	var memRequest *resource.Quantity
	if act != nil {
		// Kubelet's actuated resources are quantities as the spec wrote
		// them; podsync keeps their values: the spec's quantity stands
		// for an equal value.
		q := func(v int64, name corev1.ResourceName, from corev1.ResourceList, milli bool) *resource.Quantity {
			if sq, ok := from[name]; ok && (milli && sq.MilliValue() == v || !milli && sq.Value() == v) {
				c := sq.DeepCopy()
				return &c
			}
			if milli {
				return resource.NewMilliQuantity(v, resource.DecimalSI)
			}
			return resource.NewQuantity(v, resource.BinarySI)
		}
		if r == nil {
			r = &podsync.ContainerResources{CPURequest: q(act.CPURequest, corev1.ResourceCPU, spec.Resources.Requests, true),
				CPULimit: q(act.CPULimit, corev1.ResourceCPU, spec.Resources.Limits, true), MemoryLimit: q(act.MemoryLimit, corev1.ResourceMemory, spec.Resources.Limits, false)}
			memRequest = q(act.MemoryRequest, corev1.ResourceMemory, spec.Resources.Requests, false)
		} else if act.MemoryRequest != 0 {
			memRequest = q(act.MemoryRequest, corev1.ResourceMemory, spec.Resources.Requests, false)
		}
	}
	if r == nil {
		r = &podsync.ContainerResources{}
	}
	// kubelet's cm.MinMilliCPULimit and cm.MinShares.
	const minMilliCPULimit, minShares = 10, 2
	if res.Limits != nil {
		if r.CPULimit != nil {
			// Below the smallest effective limit both ways, the spec's
			// value stays, so that the two compare equal.
			if r.CPULimit.MilliValue() > minMilliCPULimit || res.Limits.Cpu().MilliValue() > minMilliCPULimit {
				res.Limits[corev1.ResourceCPU] = r.CPULimit.DeepCopy()
			}
		} else {
			keep(corev1.ResourceCPU, oldRes.Limits, res.Limits)
		}
		if r.MemoryLimit != nil {
			res.Limits[corev1.ResourceMemory] = r.MemoryLimit.DeepCopy()
		} else {
			keep(corev1.ResourceMemory, oldRes.Limits, res.Limits)
		}
	}
	if res.Requests != nil {
		if r.CPURequest != nil {
			if r.CPURequest.MilliValue() > minShares || res.Requests.Cpu().MilliValue() > minShares {
				res.Requests[corev1.ResourceCPU] = r.CPURequest.DeepCopy()
			}
		} else {
			keep(corev1.ResourceCPU, oldRes.Requests, res.Requests)
		}
		if memRequest != nil {
			res.Requests[corev1.ResourceMemory] = *memRequest
		} else {
			keep(corev1.ResourceMemory, oldRes.Requests, res.Requests)
		}
	}
	return res
}

func hasTrueCondition(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerUser is kubelet's convertContainerStatusUser.
func containerUser(u *runtimeapi.ContainerUser) *corev1.ContainerUser {
	if u == nil {
		return nil
	}
	out := &corev1.ContainerUser{}
	if l := u.GetLinux(); l != nil {
		out.Linux = &corev1.LinuxContainerUser{UID: l.GetUid(), GID: l.GetGid(), SupplementalGroups: l.GetSupplementalGroups()}
	}
	return out
}
