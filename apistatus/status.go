package apistatus

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	netutils "k8s.io/utils/net"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
)

// Kubelet's waiting reasons for containers not yet created.
const (
	ContainerCreating = "ContainerCreating"
	PodInitializing   = "PodInitializing"
)

// Kubelet's condition reasons.
const (
	UnknownContainerStatuses = "UnknownContainerStatuses"
	PodCompleted             = "PodCompleted"
	PodFailed                = "PodFailed"
	ContainersNotReady       = "ContainersNotReady"
	ContainersNotInitialized = "ContainersNotInitialized"
	ReadinessGatesNotReady   = "ReadinessGatesNotReady"
	// PodSandboxNotReady is PodReadyToStartContainers' reason when it is
	// False (v1.37); its message is one of podsync's SandboxMessage
	// constants.
	PodSandboxNotReady = "PodSandboxNotReady"
)

// Kubelet's limit on all termination messages of one pod together.
const MaxPodTerminationMessageLength = 12 * 1024

// Reason is a container's last start failure: Err's text is the waiting
// reason, Message the waiting message.
type Reason struct {
	Err     error
	Message string
}

// Reasons is kubelet's reason cache: per pod and container, the last
// failure to start it, kept until a start succeeds. It is safe for
// concurrent use.
type Reasons struct {
	mu     sync.Mutex
	m      map[types.UID]map[string]Reason
	resize map[types.UID]Reason
}

// NewReasons returns an empty cache.
func NewReasons() *Reasons {
	return &Reasons{m: map[types.UID]map[string]Reason{}, resize: map[types.UID]Reason{}}
}

// Update records a sync's start results, as kubelet's updateReasonCache:
// a failed start sets its container's reason, a successful one clears it.
func (r *Reasons) Update(uid types.UID, result podsync.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sr := range result.Results {
		if sr.Action == podsync.ActionResizePodInPlace {
			if sr.Err == nil {
				delete(r.resize, uid)
			} else {
				r.resize[uid] = Reason{Err: sr.Err, Message: sr.Message}
			}
			continue
		}
		if sr.Action != podsync.ActionStartContainer {
			continue
		}
		if sr.Err == nil {
			delete(r.m[uid], sr.Target)
			continue
		}
		if r.m[uid] == nil {
			r.m[uid] = map[string]Reason{}
		}
		r.m[uid][sr.Target] = Reason{Err: sr.Err, Message: sr.Message}
	}
}

// ResizeFor returns the pod's last in-place resize failure, nil when the
// last resize succeeded or none failed.
func (r *Reasons) ResizeFor(uid types.UID) *Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rr, ok := r.resize[uid]; ok {
		return &rr
	}
	return nil
}

// For returns a copy of a pod's reasons.
func (r *Reasons) For(uid types.UID) map[string]Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Reason, len(r.m[uid]))
	for k, v := range r.m[uid] {
		out[k] = v
	}
	return out
}

// Forget drops a pod's reasons.
func (r *Reasons) Forget(uid types.UID) {
	r.mu.Lock()
	delete(r.m, uid)
	delete(r.resize, uid)
	r.mu.Unlock()
}

// Probes reports readiness and startup probe results by container ID
// (the runtime's ID, without the "<runtime>://" prefix).
type Probes interface {
	Readiness(containerID string) (podsync.ProbeResult, bool)
	Startup(containerID string) (podsync.ProbeResult, bool)
}

// Input is everything PodStatus needs.
type Input struct {
	// Pod is the pod as the API server has it, its Status included.
	Pod *corev1.Pod
	// Status is the runtime's view (podsync's Status); nil: nothing yet.
	Status *podsync.PodStatus
	// Reasons are the containers' last start failures (Reasons.For).
	Reasons map[string]Reason
	// Previous is the status last generated for the pod; nil: Pod.Status.
	Previous *corev1.PodStatus
	// Probes gives probe results (nil: no probe has run).
	Probes Probes
	// ProberStart is when the caller's prober started (kubelet's prober
	// manager start). A container running since more than 10 s before it,
	// with a readiness probe that has not run yet, is ready if the API
	// server has the pod Ready, as kubelet keeps it across its restarts;
	// zero: never.
	ProberStart time.Time
	// RuntimeName prefixes container IDs ("containerd://…"); empty:
	// "containerd".
	RuntimeName string
	// HostIPs are the node's IPs, primary first: its InternalIPs, then
	// its ExternalIPs. The status keeps the first and the first of the
	// other family, as kubelet's GetNodeHostIPs.
	HostIPs []string
	// Terminal: the pod's containers will not run again (it was killed
	// for good, as kubelet's podIsTerminal).
	Terminal bool
	// Now stamps a new start time and condition transitions (zero: now).
	Now time.Time
	// ResizeError is the last in-place resize failure (Reasons.ResizeFor);
	// nil: none.
	ResizeError *Reason
	// PodCgroup is what the pod's cgroup holds, read back
	// (cgroups.Manager.CgroupConfig), on a node that makes pod cgroups:
	// kubelet reports a Running pod's pod-level Resources from it. Nil:
	// the node makes none (kubelet with cgroupsPerQOS false).
	PodCgroup *cgroups.ResourceConfig
}

// PodStatus is kubelet's generateAPIPodStatus followed by what its status
// manager does before sending the status: transition times, start time,
// normalisation.
func PodStatus(in Input) corev1.PodStatus {
	pod := in.Pod
	rs := in.Status
	if rs == nil {
		rs = &podsync.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	old := pod.Status
	if in.Previous != nil {
		old = *in.Previous
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	runtimeName := in.RuntimeName
	if runtimeName == "" {
		runtimeName = "containerd"
	}
	c := converter{pod: pod, rs: rs, reasons: in.Reasons, runtime: runtimeName, hasInit: len(pod.Spec.InitContainers) > 0}

	var s corev1.PodStatus
	for _, ip := range sortPodIPs(rs.IPs, in.HostIPs) {
		s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	s.QOSClass = criconfig.QOSClass(pod)
	s.ContainerStatuses = c.statuses(old.ContainerStatuses, pod.Spec.Containers, false)
	s.InitContainerStatuses = c.statuses(old.InitContainerStatuses, pod.Spec.InitContainers, true)
	var eph []corev1.Container
	for i := range pod.Spec.EphemeralContainers {
		eph = append(eph, corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	s.EphemeralContainerStatuses = c.statuses(old.EphemeralContainerStatuses, eph, false)

	all := append(append([]corev1.ContainerStatus{}, s.ContainerStatuses...), s.InitContainerStatuses...)
	s.Phase = phase(pod, all, in.Terminal, hasActiveRegularContainer(pod, rs))
	if s.Phase != corev1.PodFailed && s.Phase != corev1.PodSucceeded {
		switch {
		case old.Phase == corev1.PodFailed || old.Phase == corev1.PodSucceeded:
			s.Phase = old.Phase
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			s.Phase = pod.Status.Phase
		}
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	// Kubelet's PodSyncHandlers: the active deadline handler fails a pod
	// past its deadline (start time from the status last generated).
	if PastActiveDeadline(pod, &old, now) {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, DeadlineExceeded, DeadlineExceededMessage
	}
	if (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) && s.Phase != pod.Status.Phase {
		s.Phase = pod.Status.Phase // no transition out of a terminal phase
	}

	s.Resources, s.AllocatedResources = podResources(pod, &old, s.Phase == corev1.PodFailed || s.Phase == corev1.PodSucceeded, in.PodCgroup)

	updateProbeStatus(pod, &s, in.Probes, in.ProberStart)

	gen := pod.Generation
	for _, cond := range pod.Status.Conditions {
		if !byKubelet(cond.Type) {
			s.Conditions = append(s.Conditions, cond)
		}
	}
	if c := resizeCondition(pod, rs, &old, in.ResizeError, in.Terminal, now); c != nil {
		s.Conditions = append(s.Conditions, *c)
	}
	if cond := findCondition(old.Conditions, corev1.DisruptionTarget); cond != nil {
		s.Conditions = replaceOrAppend(s.Conditions, *cond)
	}
	needSandbox, _, _, why := podsync.SandboxChanged(pod, rs)
	ready := corev1.PodCondition{Type: corev1.PodReadyToStartContainers, ObservedGeneration: gen, Status: corev1.ConditionTrue}
	if needSandbox {
		ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, PodSandboxNotReady, why
	}
	allStatuses := append(append([]corev1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	s.Conditions = append(s.Conditions, ready,
		InitializedCondition(pod, &old, allStatuses, s.Phase),
		ReadyCondition(pod, &old, s.Conditions, allStatuses, s.Phase),
		ContainersReadyCondition(pod, &old, allStatuses, s.Phase),
		corev1.PodCondition{Type: corev1.PodScheduled, ObservedGeneration: gen, Status: corev1.ConditionTrue})

	if hostIPs := nodeIPs(in.HostIPs); len(hostIPs) > 0 {
		s.HostIP = hostIPs[0]
		s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
		if len(hostIPs) > 1 {
			s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: hostIPs[1]})
		}
		if pod.Spec.HostNetwork {
			if s.PodIP == "" {
				s.PodIP = hostIPs[0]
				s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
			}
			if len(hostIPs) > 1 && len(s.PodIPs) == 1 && family(s.PodIPs[0].IP) != family(hostIPs[1]) {
				s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: hostIPs[1]})
			}
		}
	}

	// The status manager's part.
	s.ObservedGeneration = gen
	if old.ObservedGeneration > s.ObservedGeneration {
		// Never lowered: a status already seen with a newer generation.
		s.ObservedGeneration = old.ObservedGeneration
	}
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady, corev1.PodInitialized,
		corev1.PodReadyToStartContainers, corev1.PodScheduled, corev1.DisruptionTarget} {
		setTransitionTime(&s, &old, t, now)
	}
	if old.StartTime != nil && !old.StartTime.IsZero() {
		s.StartTime = old.StartTime.DeepCopy()
	} else {
		t := metav1.NewTime(now)
		s.StartTime = &t
	}
	Normalize(pod, &s)
	return s
}

func byKubelet(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady,
		corev1.PodReadyToStartContainers, corev1.PodResizePending, corev1.PodResizeInProgress, corev1.AllContainersRestarting:
		return true
	}
	return false
}

func findCondition(list []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

func replaceOrAppend(list []corev1.PodCondition, c corev1.PodCondition) []corev1.PodCondition {
	for i := range list {
		if list[i].Type == c.Type {
			list[i] = c
			return list
		}
	}
	return append(list, c)
}

// setTransitionTime is the status manager's updateLastTransitionTime.
func setTransitionTime(s, old *corev1.PodStatus, t corev1.PodConditionType, now time.Time) {
	c := findCondition(s.Conditions, t)
	if c == nil {
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	if o := findCondition(old.Conditions, t); o != nil && o.Status == c.Status {
		c.LastTransitionTime = o.LastTransitionTime
	}
}

// sortPodIPs is kubelet's: the first IP of the node's primary family, then
// the first of the other, each parsed as kubelet parses them (leading
// zeros in IPv4 allowed) and written in canonical form.
func sortPodIPs(ips, hostIPs []string) []string {
	primary6 := len(hostIPs) > 0 && family(hostIPs[0]) == 6
	var out []string
	for _, want := range []bool{primary6, !primary6} {
		for _, s := range ips {
			if a, ok := parseIP(s); ok && a.Is6() == want {
				out = append(out, a.String())
				break
			}
		}
	}
	return out
}

// parseIP is kubelet's ParseIPSloppy (IPv4 with leading zeros, no zones),
// IPv4-mapped IPv6 as IPv4; netip first, which allocates nothing.
func parseIP(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), a.Zone() == ""
	}
	a, ok := netip.AddrFromSlice(netutils.ParseIPSloppy(s))
	return a.Unmap(), ok
}

// nodeIPs is kubelet's GetNodeHostIPs on addresses already in its order
// (InternalIPs, then ExternalIPs): the first, then the first of the other
// family; unparsable ones skipped.
func nodeIPs(addrs []string) []string {
	var out []string
	first := netip.Addr{}
	for _, s := range addrs {
		a, ok := parseIP(s)
		switch {
		case !ok:
		case len(out) == 0:
			first = a
			out = append(out, a.String())
		case a.Is6() != first.Is6():
			return append(out, a.String())
		}
	}
	return out
}

// family is 4 or 6, 0 for what does not parse (kubelet's
// IPFamilyOfString).
func family(s string) int {
	a, ok := parseIP(s)
	switch {
	case !ok:
		return 0
	case a.Is4():
		return 4
	}
	return 6
}

// hasActiveRegularContainer is kubelet's
// HasAnyActiveRegularContainerStarted: an app container instance in the
// newest sandbox, when that sandbox is ready (kubelet's GetPodStatus has
// no active sandbox, so no active containers, otherwise).
func hasActiveRegularContainer(pod *corev1.Pod, rs *podsync.PodStatus) bool {
	if len(rs.SandboxStatuses) == 0 || rs.SandboxStatuses[0].GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return false
	}
	newest := rs.SandboxStatuses[0].Id
	apps := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		apps[c.Name] = true
	}
	for _, cs := range rs.ContainerStatuses {
		if apps[cs.Name] && cs.SandboxID == newest {
			return true
		}
	}
	return false
}

// Normalize is kubelet's status manager normalizeStatus, in place: times
// to whole seconds (the API server keeps no more), termination messages
// cut to MaxPodTerminationMessageLength shared by the pod's containers,
// app and ephemeral statuses sorted by name, init statuses in spec order.
// PodStatus's result is already normalised; a status read back from the
// API server can be normalised before it is compared with one.
func Normalize(pod *corev1.Pod, s *corev1.PodStatus) {
	per := MaxPodTerminationMessageLength
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		per /= n
	}
	ts := func(t *metav1.Time) { *t = t.Rfc3339Copy() }
	state := func(c *corev1.ContainerState) {
		if c.Running != nil {
			ts(&c.Running.StartedAt)
		}
		if c.Terminated != nil {
			ts(&c.Terminated.StartedAt)
			ts(&c.Terminated.FinishedAt)
			if len(c.Terminated.Message) > per {
				c.Terminated.Message = c.Terminated.Message[:per]
			}
		}
	}
	if s.StartTime != nil {
		ts(s.StartTime)
	}
	for i := range s.Conditions {
		ts(&s.Conditions[i].LastProbeTime)
		ts(&s.Conditions[i].LastTransitionTime)
	}
	for _, list := range [][]corev1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	sort.SliceStable(s.ContainerStatuses, func(i, j int) bool { return s.ContainerStatuses[i].Name < s.ContainerStatuses[j].Name })
	sort.SliceStable(s.EphemeralContainerStatuses, func(i, j int) bool {
		return s.EphemeralContainerStatuses[i].Name < s.EphemeralContainerStatuses[j].Name
	})
	sortInit(pod, s.InitContainerStatuses)
}

// sortInit orders init container statuses as the spec does (kubelet's
// SortInitContainerStatuses: statuses of names the spec lacks stay last).
func sortInit(pod *corev1.Pod, list []corev1.ContainerStatus) {
	cur := 0
	for _, c := range pod.Spec.InitContainers {
		for j := cur; j < len(list); j++ {
			if list[j].Name == c.Name {
				list[cur], list[j] = list[j], list[cur]
				cur++
				break
			}
		}
	}
}

func names(list []string) string { return fmt.Sprintf("[%s]", strings.Join(list, " ")) }

// resizeCondition is kubelet's PodResizeInProgress condition: present
// while a running container does not yet run with its spec's resources,
// with reason Error and the failure's message after a failed resize. Its
// observed generation is the one the resize began at.
func resizeCondition(pod *corev1.Pod, rs *podsync.PodStatus, old *corev1.PodStatus, failure *Reason, terminal bool, now time.Time) *corev1.PodCondition {
	if terminal || !podsync.ResizeInProgress(pod, rs) {
		return nil
	}
	c := &corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	if failure != nil {
		c.Reason, c.Message = corev1.PodReasonError, failure.Message
	}
	if prev := findCondition(old.Conditions, corev1.PodResizeInProgress); prev != nil {
		c.ObservedGeneration = prev.ObservedGeneration
		if prev.Reason == c.Reason {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
	return c
}

// podResources is the pod-level Resources and AllocatedResources of
// kubelet v1.37.2 (InPlacePodLevelResourcesVerticalScaling, on by default;
// convertToAPIPodLevelResourcesStatus) on a node without pod cgroups to
// read, as podstart makes none (kubelet with cgroupsPerQOS false). The
// allocated resources are the pod's effective requests (containers and
// sidecars by the sidecar KEP's formula, pod-level requests over them,
// plus overhead). Resources, while the API server does not have the pod
// Running, are those requests and the effective limits; once it does,
// they are the pod-level requests and limits of the spec, a memory request
// from the effective requests when the spec has none, and the previous
// status's CPU request and CPU and memory limits when that status was
// Running too (kubelet's preserveOldResourcesValue, standing in for the
// cgroup values it cannot read). So a pod that ran keeps its values,
// while one that ended is reported with what its spec sets at pod level
// and its memory request alone.
//
// A status that ends the pod (ends) is given what kubelet leaves in the API
// server for it, whatever phase the API server shows at that moment:
// kubelet generates a terminal pod's status again in its terminating sync,
// by when the API server has the pod Running and kubelet's cached status,
// the old one, is terminal, so nothing is preserved; and no pod cgroup
// value either (cg is ignored): the status kubelet leaves is the one it
// makes once the pod has ended, when it reads no value from the pod's
// cgroup (side by side with kubelet v1.37.2 and pod cgroups, 5 of 5 ended
// pods showed no cgroup limits, where reading the cgroup gave, say, a
// BestEffort pod's page-rounded maximum as its memory limit).
//
// With the pod's cgroup read back (cg), a Running pod's CPU request, CPU
// limit and memory limit are the cgroup's where it has them, as kubelet
// with pod cgroups reads them (the allocated CPU request kept when both
// are at the minimum shares or the shares round-trip through cgroup v2's
// weight, the CPU limit only above the minimum quota), else preserved as
// above.
func podResources(pod *corev1.Pod, old *corev1.PodStatus, ends bool, cg *cgroups.ResourceConfig) (*corev1.ResourceRequirements, corev1.ResourceList) {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	r := pod.Spec.Resources.DeepCopy()
	if r == nil {
		r = &corev1.ResourceRequirements{}
	}
	if ends {
		o := *old
		o.Phase = corev1.PodFailed
		old = &o
		cg = nil
	} else if pod.Status.Phase != corev1.PodRunning {
		r.Requests = requests
		r.Limits = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
		return r, requests.DeepCopy()
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	preserve := func(name corev1.ResourceName, from func(*corev1.ResourceRequirements) corev1.ResourceList, into corev1.ResourceList) {
		if old.Phase != corev1.PodRunning || old.Resources == nil {
			return
		}
		if q, ok := from(old.Resources)[name]; ok {
			into[name] = q.DeepCopy()
		}
	}
	oldRequests := func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }
	oldLimits := func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }
	cpuRequest, cpuLimit, memoryLimit := cgroupValues(cg)
	if cpuRequest != nil {
		if cpuRequest.MilliValue() > minShares || r.Requests.Cpu().MilliValue() > minShares {
			allocated := uint64(criconfig.MilliCPUToShares(r.Requests.Cpu().MilliValue()))
			if cg.CPUShares == nil || cgroups.CPUSharesFromWeight(cgroups.CPUWeight(allocated)) != *cg.CPUShares {
				r.Requests[corev1.ResourceCPU] = *cpuRequest
			}
		}
	} else {
		preserve(corev1.ResourceCPU, oldRequests, r.Requests)
	}
	if _, ok := r.Requests[corev1.ResourceMemory]; !ok {
		if q, ok := requests[corev1.ResourceMemory]; ok {
			r.Requests[corev1.ResourceMemory] = q.DeepCopy()
		}
	}
	if cpuLimit != nil {
		if cpuLimit.MilliValue() > minMilliCPULimit || r.Limits.Cpu().MilliValue() > minMilliCPULimit {
			r.Limits[corev1.ResourceCPU] = *cpuLimit
		}
	} else {
		preserve(corev1.ResourceCPU, oldLimits, r.Limits)
	}
	if memoryLimit != nil {
		r.Limits[corev1.ResourceMemory] = *memoryLimit
	} else {
		preserve(corev1.ResourceMemory, oldLimits, r.Limits)
	}
	return r, requests.DeepCopy()
}

// Kubelet's cm.MinShares and cm.MinMilliCPULimit.
const (
	minShares        = 2
	minMilliCPULimit = 10
)

// cgroupValues are kubelet's CPURequestsFromConfig, CPULimitsFromConfig
// and MemoryLimitsFromConfig: what a pod cgroup's shares, quota and memory
// limit mean as quantities (nil where the cgroup has none, or no cgroup).
func cgroupValues(cg *cgroups.ResourceConfig) (cpuRequest, cpuLimit, memoryLimit *resource.Quantity) {
	if cg == nil {
		return nil, nil, nil
	}
	if cg.CPUShares != nil && *cg.CPUShares >= minShares {
		if milli := int64(math.Ceil(float64(*cg.CPUShares*1000) / 1024)); milli > 0 {
			cpuRequest = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if cg.CPUPeriod != nil && *cg.CPUPeriod > 0 && cg.CPUQuota != nil && *cg.CPUQuota != -1 {
		if milli := *cg.CPUQuota * 1000 / int64(*cg.CPUPeriod); milli > 0 {
			cpuLimit = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if cg.Memory != nil && *cg.Memory > 0 {
		memoryLimit = resource.NewQuantity(*cg.Memory, resource.BinarySI)
	}
	return cpuRequest, cpuLimit, memoryLimit
}
