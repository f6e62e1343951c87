package diff

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	kubeletstatus "k8s.io/kubernetes/pkg/kubelet/status"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// randomStatusCase: a pod with up to 3 init containers (some sidecars), up
// to 3 app containers and readiness gates; container statuses in any
// state, ready or not, started or not, some missing; other conditions;
// an old status with or without Initialized.
func randomStatusCase(r *rand.Rand) (*corev1.Pod, *corev1.PodStatus, []corev1.ContainerStatus, []corev1.PodCondition, corev1.PodPhase) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{}
	pod.Generation = int64(r.IntN(5))
	names := []string{"a", "b", "c"}
	var statuses []corev1.ContainerStatus
	add := func(name string) {
		if r.IntN(5) == 0 {
			return // unknown
		}
		s := corev1.ContainerStatus{Name: name, Ready: r.IntN(2) == 0}
		if r.IntN(3) > 0 {
			v := r.IntN(2) == 0
			s.Started = &v
		}
		switch r.IntN(4) {
		case 0:
			s.State.Running = &corev1.ContainerStateRunning{}
		case 1:
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(r.IntN(2))}
		case 2:
			s.State.Waiting = &corev1.ContainerStateWaiting{}
		}
		statuses = append(statuses, s)
	}
	for _, n := range names[:r.IntN(4)] {
		c := corev1.Container{Name: "init-" + n}
		if r.IntN(2) == 0 {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		add(c.Name)
	}
	for _, n := range names[:r.IntN(4)] {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n})
		add(n)
	}
	if r.IntN(8) == 0 {
		statuses = nil
	}
	var conds []corev1.PodCondition
	for _, g := range []corev1.PodConditionType{"x.io/one", "x.io/two"}[:r.IntN(3)] {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		if r.IntN(3) > 0 {
			conds = append(conds, corev1.PodCondition{Type: g, Status: pick(r, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown})})
		}
	}
	old := &corev1.PodStatus{}
	if r.IntN(2) == 0 {
		old.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: pick(r, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse})}}
	}
	phase := pick(r, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed})
	return pod, old, statuses, conds, phase
}

// TestStatusConditions compares the three container-driven conditions
// with kubelet's exported generators.
func TestStatusConditions(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	for range n {
		pod, old, statuses, conds, phase := randomStatusCase(r)
		pairs := []struct {
			name        string
			got, wanted corev1.PodCondition
		}{
			{"ContainersReady", apistatus.ContainersReadyCondition(pod, old, statuses, phase), kubeletstatus.GenerateContainersReadyCondition(pod, old, statuses, phase)},
			{"Ready", apistatus.ReadyCondition(pod, old, conds, statuses, phase), kubeletstatus.GeneratePodReadyCondition(pod, old, conds, statuses, phase)},
			{"Initialized", apistatus.InitializedCondition(pod, old, statuses, phase), kubeletstatus.GeneratePodInitializedCondition(pod, old, statuses, phase)},
		}
		for _, p := range pairs {
			if diff := cmp.Diff(p.wanted, p.got); diff != "" {
				d.add("%s condition differs (-kubelet +podstart):\n%s\npod %+v\nstatuses %+v\nphase %s", p.name, diff, pod.Spec, statuses, phase)
			}
		}
	}
	d.report(n, "pods' conditions")
}

// randomSandboxes: up to three sandboxes, newest first, ready or not,
// with or without an IP and a network namespace option.
func randomSandboxes(r *rand.Rand) []*runtimeapi.PodSandboxStatus {
	var out []*runtimeapi.PodSandboxStatus
	for i := range r.IntN(4) {
		sb := &runtimeapi.PodSandboxStatus{Id: fmt.Sprintf("sb%d", i), Metadata: &runtimeapi.PodSandboxMetadata{Attempt: uint32(r.IntN(3))},
			State: pick(r, []runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY})}
		if r.IntN(4) > 0 {
			sb.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: pick(r, []string{"", "10.0.0.7", "fd00::7"})}
		}
		if r.IntN(2) == 0 {
			sb.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
				Network: pick(r, []runtimeapi.NamespaceMode{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_NODE})}}}
		}
		out = append(out, sb)
	}
	return out
}

// TestReadyToStartContainersCondition compares PodStatus's
// PodReadyToStartContainers condition with kubelet's exported
// GeneratePodReadyToStartContainersCondition (PodSandboxChanged) on random
// sandboxes, host-network or not, and the status's observed generations
// with the pod's (CalculatePodConditionObservedGeneration, GA).
func TestReadyToStartContainersCondition(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	for range n {
		pod := &corev1.Pod{}
		pod.UID = "uid"
		pod.Generation = int64(r.IntN(5))
		pod.Spec.HostNetwork = r.IntN(2) == 0
		sandboxes := randomSandboxes(r)
		old := &corev1.PodStatus{}
		want := kubeletstatus.GeneratePodReadyToStartContainersCondition(pod, old,
			&kubecontainer.PodStatus{ID: pod.UID, SandboxStatuses: sandboxes})
		s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{UID: pod.UID, SandboxStatuses: sandboxes}, Previous: old, Now: time.Unix(0, 0)})
		var got corev1.PodCondition
		for _, c := range s.Conditions {
			if c.Type == corev1.PodReadyToStartContainers {
				got = c
				got.LastTransitionTime = metav1.Time{}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			d.add("PodReadyToStartContainers differs (-kubelet +podstart):\n%s\nhostNetwork %v sandboxes %v", diff, pod.Spec.HostNetwork, sandboxes)
		}
	}
	d.report(n, "pods' PodReadyToStartContainers conditions")
}
