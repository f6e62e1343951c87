package podsync

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// KillReason is why a container is killed, as kubelet records it.
type KillReason string

// Kill reasons.
const (
	KillReasonNone                KillReason = ""
	KillReasonStartupProbe        KillReason = "StartupProbe"
	KillReasonLivenessProbe       KillReason = "LivenessProbe"
	KillReasonFailedPostStartHook KillReason = "FailedPostStartHook"
	KillReasonUnknown             KillReason = "Unknown"
)

// ContainerToKill is one container instance to kill.
type ContainerToKill struct {
	Name      string
	Container *corev1.Container
	Reason    KillReason
	// Message says why, in kubelet's words.
	Message string
}

// Actions is what must happen next to a pod (kubelet's podActions, for
// the sidecar-aware path that is kubelet's default).
type Actions struct {
	// KillPod: stop every container and the sandbox.
	KillPod bool
	// CreateSandbox: create a new sandbox (after killing the old one).
	CreateSandbox bool
	// SandboxID is the sandbox to start containers in; when a sandbox is
	// created it is the old one's ID ("" when there was none, or when the
	// network namespace changed).
	SandboxID string
	// Attempt is the sandbox attempt number to use.
	Attempt uint32
	// InitContainersToStart are indexes into spec.initContainers, in spec
	// order.
	InitContainersToStart []int
	// ContainersToStart are indexes into spec.containers.
	ContainersToStart []int
	// ContainersToKill maps a runtime container ID to what to kill.
	ContainersToKill map[string]ContainerToKill
	// EphemeralContainersToStart are indexes into spec.ephemeralContainers.
	EphemeralContainersToStart []int
	// ContainersToUpdate are running containers resized in place, by
	// resource (memory, CPU), decreases before increases.
	ContainersToUpdate map[corev1.ResourceName][]ContainerToUpdate
	// UpdatePodResources: a container restarts because its resize policy
	// asks for it.
	UpdatePodResources bool

	// Beyond kubelet: why, for people and logs.
	SandboxReason string   // why the sandbox is (re)created, if it is
	KillPodReason string   // why the pod is killed, if it is
	Waiting       []string // why the pod waits instead of going on

	pod *corev1.Pod
}

// ProbeResult is a probe's latest result.
type ProbeResult int

// Probe results.
const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

// ProbeResults gives the latest liveness and startup results by container
// ID; found is false when the probe has not run yet. A nil ProbeResults
// means no results at all.
type ProbeResults interface {
	Liveness(containerID string) (result ProbeResult, found bool)
	Startup(containerID string) (result ProbeResult, found bool)
}

func liveness(p ProbeResults, id string) (ProbeResult, bool) {
	if p == nil {
		return ProbeUnknown, false
	}
	return p.Liveness(id)
}

func startup(p ProbeResults, id string) (ProbeResult, bool) {
	if p == nil {
		return ProbeUnknown, false
	}
	return p.Startup(id)
}

// IsRestartableInitContainer reports whether an init container is a
// sidecar (restartPolicy: Always).
func IsRestartableInitContainer(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Why a pod needs a new sandbox: kubelet's messages (pkg/kubelet/types,
// v1.37), which SandboxChanged returns and the PodReadyToStartContainers
// condition carries when it is False.
const (
	SandboxMessageNone             = "no pod sandbox exists"
	SandboxMessageMultiple         = "multiple pod sandboxes are ready and need to be reconciled"
	SandboxMessageNotReady         = "pod sandbox is not ready"
	SandboxMessageNetworkNamespace = "network namespace mode changed and sandbox needs to be recreated"
	SandboxMessageNoIP             = "pod sandbox has no IP address"
)

// SandboxChanged is kubelet's PodSandboxChanged: whether the pod needs a
// new sandbox, the attempt to use, the sandbox to start containers in, and
// why, one of the SandboxMessage constants (empty when nothing changed).
func SandboxChanged(pod *corev1.Pod, status *PodStatus) (changed bool, attempt uint32, sandboxID, reason string) {
	if status == nil || len(status.SandboxStatuses) == 0 {
		return true, 0, "", SandboxMessageNone
	}
	ready := 0
	for _, s := range status.SandboxStatuses {
		if s.GetMetadata().GetAttempt() > attempt {
			attempt = s.GetMetadata().GetAttempt()
		}
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	newest := status.SandboxStatuses[0]
	switch {
	case ready > 1:
		return true, attempt + 1, newest.GetId(), SandboxMessageMultiple
	case newest.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY:
		return true, attempt + 1, newest.GetId(), SandboxMessageNotReady
	}
	want := runtimeapi.NamespaceMode_POD
	if pod.Spec.HostNetwork {
		want = runtimeapi.NamespaceMode_NODE
	}
	if got := newest.GetLinux().GetNamespaces().GetOptions().GetNetwork(); got != want {
		return true, attempt + 1, "", SandboxMessageNetworkNamespace
	}
	if !pod.Spec.HostNetwork && newest.GetNetwork() != nil && newest.GetNetwork().GetIp() == "" {
		return true, attempt + 1, newest.GetId(), SandboxMessageNoIP
	}
	return false, attempt, newest.GetId(), ""
}

// activeStatus is kubelet's FindActiveContainerStatusByName: the newest
// instance of the named container in the current sandbox (or whose
// sandbox is unknown), or nil.
func activeStatus(status *PodStatus, name, sandboxID string) *ContainerStatus {
	for _, c := range status.ContainerStatuses {
		if c.Name == name && (c.SandboxID == "" || c.SandboxID == sandboxID) {
			return c
		}
	}
	return nil
}

// isInitContainerFailed: OOMKilled (whatever the code), exited non-zero, or
// unknown.
func isInitContainerFailed(s *ContainerStatus) bool {
	return s.Reason == "OOMKilled" || s.State == ContainerStateExited && s.ExitCode != 0 || s.State == ContainerStateUnknown
}

func containerSucceeded(c *corev1.Container, status *PodStatus) bool {
	s := status.FindContainerStatusByName(c.Name)
	return s != nil && s.State == ContainerStateExited && s.ExitCode == 0
}

// ShouldContainerBeRestarted is kubelet's rule for an app container that
// is not running.
func ShouldContainerBeRestarted(c *corev1.Container, pod *corev1.Pod, status *PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	s := status.FindContainerStatusByName(c.Name)
	if s == nil {
		return true
	}
	switch s.State {
	case ContainerStateRunning:
		return false
	case ContainerStateUnknown, ContainerStateCreated:
		return true
	}
	return ContainerShouldRestart(c, &pod.Spec, int32(s.ExitCode))
}

func restartOnFailure(pod *corev1.Pod) bool {
	return pod.Spec.RestartPolicy != corev1.RestartPolicyNever
}

// ComputePodActions is kubelet's computePodActions on its default,
// sidecar-aware path, without in-place resize: given the pod and what the
// runtime reports, what must happen next. It is pure; probes may be nil.
// A pod whose phase kubelet would find terminal (every app container
// ended and none restarts, or a regular init container failed for good)
// gets no new sandbox: kubelet's SyncPod returns before computePodActions
// for such a pod.
func ComputePodActions(pod *corev1.Pod, status *PodStatus, probes ProbeResults) Actions {
	if status == nil {
		status = &PodStatus{}
	}
	changed, attempt, sandboxID, reason := SandboxChanged(pod, status)
	a := Actions{
		KillPod: changed, CreateSandbox: changed, SandboxID: sandboxID, Attempt: attempt,
		SandboxReason: reason, ContainersToStart: []int{}, ContainersToKill: map[string]ContainerToKill{}, pod: pod,
	}
	if changed {
		if len(status.SandboxStatuses) > 0 {
			// A new pod has nothing to kill; say so only when there is.
			a.KillPodReason = reason
		}
		computeSandboxPath(pod, status, &a, attempt)
		return a
	}
	for i := range pod.Spec.EphemeralContainers {
		if status.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name) == nil {
			a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, i)
		}
	}
	if initialized := computeInitContainerActions(pod, status, probes, &a); a.KillPod || !initialized {
		return a
	}
	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s := status.FindContainerStatusByName(c.Name)
		if s == nil || s.State != ContainerStateRunning {
			if ShouldContainerBeRestarted(c, pod, status) {
				a.ContainersToStart = append(a.ContainersToStart, i)
				if s != nil && s.State == ContainerStateUnknown {
					a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: KillReasonUnknown,
						Message: fmt.Sprintf("Container is in %q state, try killing it before restart", s.State)}
				}
			}
			continue
		}
		// For probe failures only the container's own policy counts (no
		// exit code for its rules yet), as kubelet with ContainerRestartRules.
		restart := restartOnFailure(pod)
		if c.RestartPolicy != nil {
			restart = *c.RestartPolicy != corev1.ContainerRestartPolicyNever
		}
		var msg string
		var why KillReason
		if HashContainer(c) != s.Hash {
			msg, restart = fmt.Sprintf("Container %s definition changed", c.Name), true
		} else if r, ok := liveness(probes, s.ID); ok && r == ProbeFailure {
			msg, why = fmt.Sprintf("Container %s failed liveness probe", c.Name), KillReasonLivenessProbe
		} else if r, ok := startup(probes, s.ID); ok && r == ProbeFailure {
			msg, why = fmt.Sprintf("Container %s failed startup probe", c.Name), KillReasonStartupProbe
		} else if !computeResize(pod, c, s, status, &a) {
			a.ContainersToStart = append(a.ContainersToStart, i)
			continue
		} else {
			keep++
			continue
		}
		if restart {
			msg += ", will be restarted"
			a.ContainersToStart = append(a.ContainersToStart, i)
		}
		a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: why, Message: msg}
	}
	if keep == 0 && len(a.ContainersToStart) == 0 {
		a.KillPod = true
		a.KillPodReason = "no container is running or to be started"
		// Sidecars must not keep a finished pod alive.
		a.InitContainersToStart = nil
	}
	return a
}

func computeSandboxPath(pod *corev1.Pod, status *PodStatus, a *Actions, attempt uint32) {
	if !restartOnFailure(pod) && attempt != 0 && len(status.ContainerStatuses) != 0 {
		a.CreateSandbox = false
		a.KillPodReason = reasonJoin(a.KillPodReason, "restartPolicy is Never and containers already ran: the sandbox is not recreated")
		return
	}
	if phaseTerminal(pod, status) {
		// Kubelet's SyncPod returns before its runtime's SyncPod for a pod
		// whose phase is terminal: a new sandbox is never made for it, as
		// for a pod of restartPolicy Always whose one container has
		// restartPolicy Never and failed.
		a.CreateSandbox = false
		a.KillPodReason = reasonJoin(a.KillPodReason, "no container restarts (the pod's phase is terminal): the sandbox is not recreated")
		return
	}
	var candidates []int
	for i := range pod.Spec.Containers {
		// ContainerRestartRules (on since v1.35): a container's own policy
		// says whether a success ends it.
		runOnce := pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure
		if p := pod.Spec.Containers[i].RestartPolicy; p != nil {
			runOnce = *p == corev1.ContainerRestartPolicyOnFailure
		}
		if runOnce && containerSucceeded(&pod.Spec.Containers[i], status) {
			continue
		}
		candidates = append(candidates, i)
	}
	if len(candidates) == 0 && hasAnyRegularContainerStatus(pod, status) {
		a.CreateSandbox = false
		a.KillPodReason = reasonJoin(a.KillPodReason, "every container has succeeded: nothing to start in a new sandbox")
		return
	}
	if len(pod.Spec.InitContainers) > 0 {
		a.InitContainersToStart = []int{0}
		return
	}
	if candidates != nil {
		a.ContainersToStart = candidates
	}
}

// phaseTerminal is kubelet's getPhase reaching Succeeded or Failed, from
// the runtime's view: a regular init container failed and does not
// restart, or every app container has exited and none restarts
// (ContainerShouldRestart on its exit code: its restartPolicy and rules,
// then the pod's).
func phaseTerminal(pod *corev1.Pod, status *PodStatus) bool {
	spec := &pod.Spec
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if IsRestartableInitContainer(c) {
			continue
		}
		if s := status.FindContainerStatusByName(c.Name); s != nil && s.State == ContainerStateExited && s.ExitCode != 0 &&
			!ContainerShouldRestart(c, spec, int32(s.ExitCode)) {
			return true
		}
	}
	if len(spec.Containers) == 0 {
		return false
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		s := status.FindContainerStatusByName(c.Name)
		if s == nil || s.State != ContainerStateExited || ContainerShouldRestart(c, spec, int32(s.ExitCode)) {
			return false
		}
	}
	return true
}

func reasonJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func hasAnyRegularContainerStatus(pod *corev1.Pod, status *PodStatus) bool {
	for i := range pod.Spec.Containers {
		if s := status.FindContainerStatusByName(pod.Spec.Containers[i].Name); s != nil {
			switch s.State {
			case ContainerStateCreated, ContainerStateRunning, ContainerStateExited:
				return true
			}
		}
	}
	return false
}

// computeInitContainerActions is kubelet's function of that name: it adds
// the init containers to start (and sidecars to kill) and reports whether
// the pod is initialised.
func computeInitContainerActions(pod *corev1.Pod, status *PodStatus, probes ProbeResults, a *Actions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	// Kubelet v1.37 looks only at the instances of the current sandbox
	// (ActiveContainerStatuses): an app container of this sandbox, in any
	// state, means the init containers ran, even if the runtime has since
	// removed them; an init container that ran in an old sandbox does not
	// count. An instance whose sandbox is unknown (SandboxID empty, a
	// status built by hand) counts as the current sandbox's, and then, as
	// before v1.37, only a created or running app container proves
	// initialisation (after a reboot every old instance is exited).
	initialized := false
	for i := range pod.Spec.Containers {
		s := activeStatus(status, pod.Spec.Containers[i].Name, a.SandboxID)
		if s != nil && (s.SandboxID != "" || s.State == ContainerStateCreated || s.State == ContainerStateRunning) {
			initialized = true
			break
		}
	}
	previouslyInitialized := initialized
	restart := restartOnFailure(pod)
	var toStart []int
	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		s := activeStatus(status, c.Name, a.SandboxID)
		sidecar := IsRestartableInitContainer(c)
		if s == nil {
			if previouslyInitialized && sidecar {
				toStart = append(toStart, i)
			}
			continue
		}
		if previouslyInitialized && !sidecar {
			continue
		}
		switch s.State {
		case ContainerStateCreated:
			toStart = append(toStart, i)
		case ContainerStateRunning:
			if !sidecar {
				// A running init container is resized in place
				// (InPlacePodVerticalScalingInitContainers, GA in v1.37).
				computeResize(pod, c, s, status, a)
				a.Waiting = append(a.Waiting, fmt.Sprintf("init container %q is running", c.Name))
				break
			}
			if c.StartupProbe != nil {
				r, found := startup(probes, s.ID)
				if !found {
					a.Waiting = append(a.Waiting, fmt.Sprintf("sidecar %q is waiting for its first startup probe", c.Name))
					break
				}
				if r != ProbeSuccess {
					if r == ProbeFailure {
						a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: KillReasonStartupProbe,
							Message: fmt.Sprintf("Init container %s failed startup probe", c.Name)}
						toStart = append(toStart, i)
					} else {
						a.Waiting = append(a.Waiting, fmt.Sprintf("sidecar %q has not passed its startup probe", c.Name))
					}
					break
				}
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !previouslyInitialized {
				toStart = append(toStart, i+1)
			}
			if HashContainer(c) != s.Hash {
				a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c,
					Message: fmt.Sprintf("Init container %s definition changed", c.Name)}
				toStart = append(toStart, i)
				break
			}
			if c.LivenessProbe != nil {
				r, found := liveness(probes, s.ID)
				if found && r == ProbeFailure {
					a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: KillReasonLivenessProbe,
						Message: fmt.Sprintf("Init container %s failed liveness probe", c.Name)}
					toStart = append(toStart, i)
					break
				}
			}
			if !computeResize(pod, c, s, status, a) {
				toStart = append(toStart, i)
			}
		case ContainerStateExited:
			if sidecar {
				toStart = append(toStart, i)
				break
			}
			if isInitContainerFailed(s) {
				// ContainerRestartRules: the container's policy and rules.
				if !ShouldContainerBeRestarted(c, pod, status) {
					a.KillPod = true
					a.KillPodReason = fmt.Sprintf("init container %q failed (exit %d, %s) and restartPolicy is Never", c.Name, s.ExitCode, s.Reason)
					a.InitContainersToStart = nil
					return false
				}
				toStart = append(toStart, i)
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else {
				toStart = append(toStart, i+1)
			}
		default:
			restart := restart
			if c.RestartPolicy != nil {
				// Only the container's policy: an unknown state has no exit
				// code for its rules.
				restart = *c.RestartPolicy != corev1.ContainerRestartPolicyNever
			}
			if !sidecar && !restart {
				a.KillPod = true
				a.KillPodReason = fmt.Sprintf("init container %q is in %q state and restartPolicy is Never", c.Name, s.State)
				a.InitContainersToStart = nil
				return false
			}
			a.ContainersToKill[s.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: KillReasonUnknown,
				Message: fmt.Sprintf("Init container is in %q state, try killing it before restart", s.State)}
			toStart = append(toStart, i)
		}
		previouslyInitialized = true
	}
	if !previouslyInitialized {
		toStart = append(toStart, 0)
	}
	for l, r := 0, len(toStart)-1; l < r; l, r = l+1, r-1 {
		toStart[l], toStart[r] = toStart[r], toStart[l]
	}
	a.InitContainersToStart = append(a.InitContainersToStart, toStart...)
	if !initialized && len(a.Waiting) == 0 && len(toStart) > 0 {
		a.Waiting = append(a.Waiting, fmt.Sprintf("app containers wait for init container %q", inits[toStart[len(toStart)-1]].Name))
	}
	return initialized
}

// String describes the actions for a log line.
func (a Actions) String() string {
	var parts []string
	name := func(list []corev1.Container, i int) string {
		if i < len(list) {
			return list[i].Name
		}
		return fmt.Sprintf("#%d", i)
	}
	var spec corev1.PodSpec
	if a.pod != nil {
		spec = a.pod.Spec
	}
	if a.KillPod && a.KillPodReason != "" {
		parts = append(parts, "kill pod ("+a.KillPodReason+")")
	}
	if a.CreateSandbox {
		parts = append(parts, fmt.Sprintf("create sandbox attempt %d (%s)", a.Attempt, a.SandboxReason))
	}
	ids := make([]string, 0, len(a.ContainersToKill))
	for id := range a.ContainersToKill {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		k := a.ContainersToKill[id]
		parts = append(parts, fmt.Sprintf("kill %s %.12s (%s)", k.Name, id, k.Message))
	}
	list := func(verb string, idx []int, cs []corev1.Container) {
		if len(idx) == 0 {
			return
		}
		names := make([]string, len(idx))
		for i, x := range idx {
			names[i] = name(cs, x)
		}
		parts = append(parts, verb+" ["+strings.Join(names, " ")+"]")
	}
	eph := make([]corev1.Container, len(spec.EphemeralContainers))
	for i := range spec.EphemeralContainers {
		eph[i] = corev1.Container{Name: spec.EphemeralContainers[i].Name}
	}
	list("start ephemeral", a.EphemeralContainersToStart, eph)
	list("start init", a.InitContainersToStart, spec.InitContainers)
	list("start", a.ContainersToStart, spec.Containers)
	for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		if us := a.ContainersToUpdate[r]; len(us) > 0 {
			names := make([]string, len(us))
			for i, u := range us {
				names[i] = u.Name
			}
			parts = append(parts, fmt.Sprintf("resize %s [%s]", r, strings.Join(names, " ")))
		}
	}
	if len(a.Waiting) > 0 {
		parts = append(parts, "waiting: "+strings.Join(a.Waiting, "; "))
	}
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, "; ")
}
