package apistatus_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// Container statuses of kubelet's kubelet_pods_test.go helpers.
func runningState(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}
func waitingState(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
}
func succeededState(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}
}
func failedState(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}
func waitingWithLastTerminationUnknown(name string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: apistatus.ContainerCreating}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", ExitCode: 137,
			Message: "The container could not be located when the pod was deleted.  The container used to be Running"}}}
}
func runningAt(name, id string, at time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, ContainerID: id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
}
func withRestartCount(s corev1.ContainerStatus, n int32) corev1.ContainerStatus {
	s.RestartCount = n
	return s
}
func withLastState(s corev1.ContainerStatus, last corev1.ContainerState) corev1.ContainerStatus {
	s.LastTerminationState = last
	return s
}

// kcond is a condition as kubelet's tests write it: type, status, reason.
type kcond struct {
	Type   corev1.PodConditionType
	Status corev1.ConditionStatus
	Reason string
}

// TestGenerateAPIPodStatusPhaseAndConditions ports the phase, reason,
// message, condition and container-state expectations of kubelet v1.36.3's
// Test_generateAPIPodStatus (the cases without pod-level resources, which
// PodStatus does not build; see the package doc). Kubelet's test marks
// every container ready through a fake prober; PodStatus has real probe
// semantics, so Ready and ContainersReady are compared only where the
// phase decides them, and Ready is not compared on containers.
func TestGenerateAPIPodStatusPhaseAndConditions(t *testing.T) {
	t.Parallel()
	desired := corev1.PodSpec{NodeName: "machine", Containers: containers("containerA", "containerB"), RestartPolicy: corev1.RestartPolicyAlways}
	never := *desired.DeepCopy()
	never.RestartPolicy = corev1.RestartPolicyNever
	sandboxReady := []*runtimeapi.PodSandboxStatus{{Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.10"},
		Metadata: &runtimeapi.PodSandboxMetadata{}, State: runtimeapi.PodSandboxState_SANDBOX_READY}}
	now := metav1.NewTime(genNow.Add(-time.Hour))
	disruption := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: now}
	running := func(names ...string) []corev1.ContainerStatus {
		var out []corev1.ContainerStatus
		for _, n := range names {
			out = append(out, runningState(n))
		}
		return out
	}
	cases := []struct {
		name          string
		pod           corev1.Pod
		sandboxes     []*runtimeapi.PodSandboxStatus
		instances     []*podsync.ContainerStatus
		previous      corev1.PodStatus
		terminal      bool
		phase         corev1.PodPhase
		reason, msg   string
		conditions    []kcond // ReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled (Ready ones "" when not compared)
		containers    []corev1.ContainerStatus
		wantDisruptor bool
	}{
		{
			name: "pod disruption condition is copied over and the phase is set to failed when deleted",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "my-pod", DeletionTimestamp: &now}, Spec: desired,
				Status: corev1.PodStatus{ContainerStatuses: running("containerA", "containerB"), Conditions: []corev1.PodCondition{disruption}}},
			sandboxes: sandboxReady,
			previous:  corev1.PodStatus{ContainerStatuses: running("containerA", "containerB"), Conditions: []corev1.PodCondition{disruption}},
			terminal:  true,
			phase:     corev1.PodFailed,
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""}, {corev1.PodInitialized, corev1.ConditionTrue, ""},
				{corev1.PodReady, corev1.ConditionFalse, "PodFailed"}, {corev1.ContainersReady, corev1.ConditionFalse, "PodFailed"}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers:    []corev1.ContainerStatus{waitingWithLastTerminationUnknown("containerA", 0), waitingWithLastTerminationUnknown("containerB", 0)},
			wantDisruptor: true,
		},
		{
			name: "current status ready, with previous statuses and deletion",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "my-pod", DeletionTimestamp: &now}, Spec: desired,
				Status: corev1.PodStatus{ContainerStatuses: running("containerA", "containerB")}},
			sandboxes: sandboxReady,
			previous:  corev1.PodStatus{ContainerStatuses: running("containerA", "containerB")},
			phase:     corev1.PodRunning,
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""}, {corev1.PodInitialized, corev1.ConditionTrue, ""},
				{corev1.PodReady, "", ""}, {corev1.ContainersReady, "", ""}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{waitingWithLastTerminationUnknown("containerA", 0), waitingWithLastTerminationUnknown("containerB", 0)},
		},
		{
			name:     "current status ready, with previous statuses and no deletion",
			pod:      corev1.Pod{Spec: desired, Status: corev1.PodStatus{ContainerStatuses: running("containerA", "containerB")}},
			previous: corev1.PodStatus{ContainerStatuses: running("containerA", "containerB")},
			phase:    corev1.PodRunning,
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionFalse, apistatus.PodSandboxNotReady}, {corev1.PodInitialized, corev1.ConditionTrue, ""},
				{corev1.PodReady, "", ""}, {corev1.ContainersReady, "", ""}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{waitingWithLastTerminationUnknown("containerA", 1), waitingWithLastTerminationUnknown("containerB", 1)},
		},
		{
			name:     "terminal phase cannot be changed (apiserver previous is succeeded)",
			pod:      corev1.Pod{Spec: desired, Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: running("containerA", "containerB")}},
			previous: corev1.PodStatus{ContainerStatuses: running("containerA", "containerB")},
			phase:    corev1.PodSucceeded,
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionFalse, apistatus.PodSandboxNotReady}, {corev1.PodInitialized, corev1.ConditionTrue, "PodCompleted"},
				{corev1.PodReady, corev1.ConditionFalse, "PodCompleted"}, {corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted"}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{waitingWithLastTerminationUnknown("containerA", 1), waitingWithLastTerminationUnknown("containerB", 1)},
		},
		{
			name:     "terminal phase from previous status must remain terminal, restartAlways",
			pod:      corev1.Pod{Spec: desired, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running("containerA", "containerB")}},
			previous: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: running("containerA", "containerB"), Reason: "Test", Message: "test"},
			phase:    corev1.PodSucceeded, reason: "Test", msg: "test",
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionFalse, apistatus.PodSandboxNotReady}, {corev1.PodInitialized, corev1.ConditionTrue, "PodCompleted"},
				{corev1.PodReady, corev1.ConditionFalse, "PodCompleted"}, {corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted"}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{waitingWithLastTerminationUnknown("containerA", 1), waitingWithLastTerminationUnknown("containerB", 1)},
		},
		{
			name:     "terminal phase from previous status must remain terminal, restartNever",
			pod:      corev1.Pod{Spec: never, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running("containerA", "containerB")}},
			previous: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{succeededState("containerA"), succeededState("containerB")}, Reason: "Test", Message: "test"},
			phase:    corev1.PodSucceeded, reason: "Test", msg: "test",
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionFalse, apistatus.PodSandboxNotReady}, {corev1.PodInitialized, corev1.ConditionTrue, "PodCompleted"},
				{corev1.PodReady, corev1.ConditionFalse, "PodCompleted"}, {corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted"}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{succeededState("containerA"), succeededState("containerB")},
		},
		{
			name:      "running can revert to pending",
			pod:       corev1.Pod{Spec: desired, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: running("containerA", "containerB")}},
			sandboxes: sandboxReady,
			previous:  corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingState("containerA"), waitingState("containerB")}},
			phase:     corev1.PodPending,
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""}, {corev1.PodInitialized, corev1.ConditionTrue, ""},
				{corev1.PodReady, "", ""}, {corev1.ContainersReady, "", ""}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{
				{Name: "containerA", State: waiting(apistatus.ContainerCreating)}, {Name: "containerB", State: waiting(apistatus.ContainerCreating)}},
		},
		{
			name:      "reason and message are preserved when phase doesn't change",
			pod:       corev1.Pod{Spec: desired, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{waitingState("containerA"), waitingState("containerB")}}},
			sandboxes: sandboxReady,
			instances: []*podsync.ContainerStatus{{ID: "foo", Name: "containerB", StartedAt: time.Unix(1, 0).UTC(), State: podsync.ContainerStateRunning}},
			previous:  corev1.PodStatus{Phase: corev1.PodPending, Reason: "Test", Message: "test", ContainerStatuses: []corev1.ContainerStatus{waitingState("containerA"), runningState("containerB")}},
			phase:     corev1.PodPending, reason: "Test", msg: "test",
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""}, {corev1.PodInitialized, corev1.ConditionTrue, ""},
				{corev1.PodReady, "", ""}, {corev1.ContainersReady, "", ""}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{{Name: "containerA", State: waiting(apistatus.ContainerCreating)},
				runningAt("containerB", "containerd://foo", time.Unix(1, 0).UTC())},
		},
		{
			name:      "reason and message are cleared when phase changes",
			pod:       corev1.Pod{Spec: desired, Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waitingState("containerA"), waitingState("containerB")}}},
			sandboxes: sandboxReady,
			instances: []*podsync.ContainerStatus{{ID: "c1", Name: "containerA", StartedAt: time.Unix(1, 0).UTC(), State: podsync.ContainerStateRunning},
				{ID: "c2", Name: "containerB", StartedAt: time.Unix(2, 0).UTC(), State: podsync.ContainerStateRunning}},
			previous: corev1.PodStatus{Phase: corev1.PodPending, Reason: "Test", Message: "test", ContainerStatuses: running("containerA", "containerB")},
			phase:    corev1.PodRunning,
			conditions: []kcond{{corev1.PodReadyToStartContainers, corev1.ConditionTrue, ""}, {corev1.PodInitialized, corev1.ConditionTrue, ""},
				{corev1.PodReady, corev1.ConditionTrue, ""}, {corev1.ContainersReady, corev1.ConditionTrue, ""}, {corev1.PodScheduled, corev1.ConditionTrue, ""}},
			containers: []corev1.ContainerStatus{runningAt("containerA", "containerd://c1", time.Unix(1, 0).UTC()),
				runningAt("containerB", "containerd://c2", time.Unix(2, 0).UTC())},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := c.pod.DeepCopy()
			prev := c.previous.DeepCopy()
			rs := &podsync.PodStatus{SandboxStatuses: c.sandboxes, ContainerStatuses: c.instances}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Previous: prev, Terminal: c.terminal,
				HostIPs: []string{"127.0.0.1", "::1"}, Now: genNow})
			if s.Phase != c.phase || s.Reason != c.reason || s.Message != c.msg {
				t.Errorf("phase %s reason %q message %q, want %s %q %q", s.Phase, s.Reason, s.Message, c.phase, c.reason, c.msg)
			}
			if s.HostIP != "127.0.0.1" || len(s.HostIPs) != 2 || s.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("host IPs %v, QoS %s", s.HostIPs, s.QOSClass)
			}
			var got []kcond
			for _, pc := range s.Conditions {
				if pc.Type == corev1.DisruptionTarget {
					if !c.wantDisruptor || pc.Status != corev1.ConditionTrue || !pc.LastTransitionTime.Equal(&now) {
						t.Errorf("DisruptionTarget %+v", pc)
					}
					continue
				}
				got = append(got, kcond{pc.Type, pc.Status, pc.Reason})
			}
			for i := range c.conditions {
				if c.conditions[i].Status == "" && i < len(got) { // decided by probes
					got[i].Status, got[i].Reason = "", ""
				}
			}
			if d := diff(c.conditions, got); d != "" {
				t.Errorf("conditions:\n%s", d)
			}
			for i := range s.ContainerStatuses {
				s.ContainerStatuses[i].Ready, s.ContainerStatuses[i].Started, s.ContainerStatuses[i].Resources = false, nil, nil
			}
			if d := diff(c.containers, s.ContainerStatuses); d != "" {
				t.Errorf("container statuses:\n%s", d)
			}
		})
	}
}

// TestNoTransitionOutOfAPITerminalPhase: kubelet's last guard in
// generateAPIPodStatus ("pods are not allowed to transition out of
// terminal phases"): a pod the API server has as Succeeded stays so even
// when its containers now say Failed.
func TestNoTransitionOutOfAPITerminalPhase(t *testing.T) {
	t.Parallel()
	pod := testPod()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Containers = containers("a")
	pod.Status.Phase = corev1.PodSucceeded
	rs := &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "a1", Name: "a", State: podsync.ContainerStateExited, ExitCode: 1}}}
	if s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Now: genNow}); s.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want the API's Succeeded", s.Phase)
	}
}
