package apistatus_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// Helpers of kubelet's pkg/kubelet/status/generate_test.go.
func condition(t corev1.PodConditionType, s corev1.ConditionStatus, reason, message string) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: message}
}
func readyStatus(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: true}
}
func notReadyStatus(name string) corev1.ContainerStatus { return corev1.ContainerStatus{Name: name} }
func startedStatus(name string, started bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Started: &started}
}

var sidecarPolicy = corev1.ContainerRestartPolicyAlways

func sidecars(names ...string) []corev1.Container {
	var out []corev1.Container
	for _, n := range names {
		out = append(out, corev1.Container{Name: n, RestartPolicy: &sidecarPolicy})
	}
	return out
}

func containers(names ...string) []corev1.Container {
	var out []corev1.Container
	for _, n := range names {
		out = append(out, corev1.Container{Name: n})
	}
	return out
}

func gates(names ...string) []corev1.PodReadinessGate {
	var out []corev1.PodReadinessGate
	for _, n := range names {
		out = append(out, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(n)})
	}
	return out
}

// containersReadyCases are kubelet v1.36.3's TestGenerateContainersReadyCondition;
// TestGeneratePodReadyCondition repeats them with the PodReady type.
var containersReadyCases = []struct {
	name     string
	spec     corev1.PodSpec
	statuses []corev1.ContainerStatus
	phase    corev1.PodPhase
	status   corev1.ConditionStatus
	reason   string
	message  string
}{
	{"no statuses", corev1.PodSpec{}, nil, corev1.PodRunning, corev1.ConditionFalse, apistatus.UnknownContainerStatuses, ""},
	{"no containers", corev1.PodSpec{}, []corev1.ContainerStatus{}, corev1.PodRunning, corev1.ConditionTrue, "", ""},
	{"one unknown", corev1.PodSpec{Containers: containers("1234")}, []corev1.ContainerStatus{}, corev1.PodRunning,
		corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unknown status: [1234]"},
	{"all ready", corev1.PodSpec{Containers: containers("1234", "5678")}, []corev1.ContainerStatus{readyStatus("1234"), readyStatus("5678")},
		corev1.PodRunning, corev1.ConditionTrue, "", ""},
	{"one missing", corev1.PodSpec{Containers: containers("1234", "5678")}, []corev1.ContainerStatus{readyStatus("1234")},
		corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unknown status: [5678]"},
	{"one unready", corev1.PodSpec{Containers: containers("1234", "5678")}, []corev1.ContainerStatus{readyStatus("1234"), notReadyStatus("5678")},
		corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unready status: [5678]"},
	{"succeeded", corev1.PodSpec{Containers: containers("1234")}, []corev1.ContainerStatus{notReadyStatus("1234")},
		corev1.PodSucceeded, corev1.ConditionFalse, apistatus.PodCompleted, ""},
	{"sidecar unknown", corev1.PodSpec{InitContainers: sidecars("restartable-init-1"), Containers: containers("regular-1")},
		[]corev1.ContainerStatus{readyStatus("regular-1")},
		corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unknown status: [restartable-init-1]"},
	{"sidecars ready", corev1.PodSpec{InitContainers: sidecars("restartable-init-1", "restartable-init-2"), Containers: containers("regular-1")},
		[]corev1.ContainerStatus{readyStatus("restartable-init-1"), readyStatus("restartable-init-2"), readyStatus("regular-1")},
		corev1.PodRunning, corev1.ConditionTrue, "", ""},
	{"second sidecar unknown", corev1.PodSpec{InitContainers: sidecars("restartable-init-1", "restartable-init-2"), Containers: containers("regular-1")},
		[]corev1.ContainerStatus{readyStatus("restartable-init-1"), readyStatus("regular-1")},
		corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unknown status: [restartable-init-2]"},
	{"second sidecar unready", corev1.PodSpec{InitContainers: sidecars("restartable-init-1", "restartable-init-2"), Containers: containers("regular-1")},
		[]corev1.ContainerStatus{readyStatus("restartable-init-1"), notReadyStatus("restartable-init-2"), readyStatus("regular-1")},
		corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unready status: [restartable-init-2]"},
}

// TestContainersReadyCondition is kubelet v1.36.3's
// TestGenerateContainersReadyCondition (pkg/kubelet/status/generate_test.go).
func TestContainersReadyCondition(t *testing.T) {
	t.Parallel()
	for _, c := range containersReadyCases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: c.spec}
			got := apistatus.ContainersReadyCondition(pod, &corev1.PodStatus{}, c.statuses, c.phase)
			want := condition(corev1.ContainersReady, c.status, c.reason, c.message)
			if diff := diff(want, got); diff != "" {
				t.Fatalf("(-kubelet +podstart):\n%s", diff)
			}
		})
	}
}

// TestReadyCondition is kubelet v1.36.3's TestGeneratePodReadyCondition:
// its first cases are TestGenerateContainersReadyCondition's with the
// PodReady type, then readiness gates.
func TestReadyCondition(t *testing.T) {
	t.Parallel()
	type tc struct {
		name       string
		spec       corev1.PodSpec
		conditions []corev1.PodCondition
		statuses   []corev1.ContainerStatus
		phase      corev1.PodPhase
		want       corev1.PodCondition
	}
	var cases []tc
	for _, c := range containersReadyCases[:7] {
		cases = append(cases, tc{c.name, c.spec, nil, c.statuses, c.phase, condition(corev1.PodReady, c.status, c.reason, c.message)})
	}
	none := []corev1.ContainerStatus{}
	cases = append(cases,
		tc{"gate missing", corev1.PodSpec{ReadinessGates: gates("gate1")}, nil, none, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionFalse, apistatus.ReadinessGatesNotReady, `corresponding condition of pod readiness gate "gate1" does not exist.`)},
		tc{"gate false", corev1.PodSpec{ReadinessGates: gates("gate1")},
			[]corev1.PodCondition{condition("gate1", corev1.ConditionFalse, "", "")}, none, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionFalse, apistatus.ReadinessGatesNotReady, `the status of pod readiness gate "gate1" is not "True", but False`)},
		tc{"gate true", corev1.PodSpec{ReadinessGates: gates("gate1")},
			[]corev1.PodCondition{condition("gate1", corev1.ConditionTrue, "", "")}, none, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionTrue, "", "")},
		tc{"second gate missing", corev1.PodSpec{ReadinessGates: gates("gate1", "gate2")},
			[]corev1.PodCondition{condition("gate1", corev1.ConditionTrue, "", "")}, none, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionFalse, apistatus.ReadinessGatesNotReady, `corresponding condition of pod readiness gate "gate2" does not exist.`)},
		tc{"second gate false", corev1.PodSpec{ReadinessGates: gates("gate1", "gate2")},
			[]corev1.PodCondition{condition("gate1", corev1.ConditionTrue, "", ""), condition("gate2", corev1.ConditionFalse, "", "")}, none, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionFalse, apistatus.ReadinessGatesNotReady, `the status of pod readiness gate "gate2" is not "True", but False`)},
		tc{"both gates true", corev1.PodSpec{ReadinessGates: gates("gate1", "gate2")},
			[]corev1.PodCondition{condition("gate1", corev1.ConditionTrue, "", ""), condition("gate2", corev1.ConditionTrue, "", "")}, none, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionTrue, "", "")},
		tc{"gate true, container unready", corev1.PodSpec{Containers: containers("1234"), ReadinessGates: gates("gate1")},
			[]corev1.PodCondition{condition("gate1", corev1.ConditionTrue, "", "")}, []corev1.ContainerStatus{notReadyStatus("1234")}, corev1.PodRunning,
			condition(corev1.PodReady, corev1.ConditionFalse, apistatus.ContainersNotReady, "containers with unready status: [1234]")},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: c.spec}
			got := apistatus.ReadyCondition(pod, &corev1.PodStatus{}, c.conditions, c.statuses, c.phase)
			if diff := diff(c.want, got); diff != "" {
				t.Fatalf("(-kubelet +podstart):\n%s", diff)
			}
		})
	}
}

// TestInitializedCondition is kubelet v1.36.3's
// TestGeneratePodInitializedCondition; kubelet's test checks type, status
// and reason, so does this one.
func TestInitializedCondition(t *testing.T) {
	t.Parallel()
	noInit := corev1.PodSpec{}
	oneInit := corev1.PodSpec{InitContainers: containers("1234"), Containers: containers("regular")}
	twoInit := corev1.PodSpec{InitContainers: containers("1234", "5678"), Containers: containers("regular")}
	oneSidecar := corev1.PodSpec{InitContainers: sidecars("1234"), Containers: containers("regular")}
	cases := []struct {
		name     string
		spec     corev1.PodSpec
		statuses []corev1.ContainerStatus
		phase    corev1.PodPhase
		status   corev1.ConditionStatus
		reason   string
	}{
		{"no statuses", twoInit, nil, corev1.PodRunning, corev1.ConditionFalse, apistatus.UnknownContainerStatuses},
		{"no init containers", noInit, []corev1.ContainerStatus{}, corev1.PodRunning, corev1.ConditionTrue, ""},
		{"init unknown", oneInit, []corev1.ContainerStatus{}, corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotInitialized},
		{"both done", twoInit, []corev1.ContainerStatus{readyStatus("1234"), readyStatus("5678")}, corev1.PodRunning, corev1.ConditionTrue, ""},
		{"second unknown", twoInit, []corev1.ContainerStatus{readyStatus("1234")}, corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotInitialized},
		{"second not done", twoInit, []corev1.ContainerStatus{readyStatus("1234"), notReadyStatus("5678")}, corev1.PodRunning, corev1.ConditionFalse, apistatus.ContainersNotInitialized},
		{"succeeded", oneInit, []corev1.ContainerStatus{readyStatus("1234")}, corev1.PodSucceeded, corev1.ConditionTrue, apistatus.PodCompleted},
		{"sidecar not started", oneSidecar, []corev1.ContainerStatus{startedStatus("1234", false)}, corev1.PodPending, corev1.ConditionFalse, apistatus.ContainersNotInitialized},
		{"sidecar started", oneSidecar, []corev1.ContainerStatus{startedStatus("1234", true)}, corev1.PodRunning, corev1.ConditionTrue, ""},
		{"sidecar not started, app running", oneSidecar, []corev1.ContainerStatus{startedStatus("1234", false),
			{Name: "regular", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}, corev1.PodRunning, corev1.ConditionTrue, ""},
		{"init waiting, app terminated", oneInit, []corev1.ContainerStatus{
			{Name: "1234", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}},
			{Name: "regular", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}, corev1.PodRunning, corev1.ConditionTrue, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: c.spec}
			got := apistatus.InitializedCondition(pod, &corev1.PodStatus{}, c.statuses, c.phase)
			if got.Type != corev1.PodInitialized || got.Status != c.status || got.Reason != c.reason {
				t.Fatalf("got %s %s %q, want %s %s %q", got.Type, got.Status, got.Reason, corev1.PodInitialized, c.status, c.reason)
			}
		})
	}
}

// TestReadyToStartContainersCondition is kubelet v1.37.2's
// TestGeneratePodReadyToStartContainersCondition, through PodStatus (the
// condition is built there): False with reason PodSandboxNotReady and
// kubelet's message for why a new sandbox is needed.
func TestReadyToStartContainersCondition(t *testing.T) {
	t.Parallel()
	meta := func(attempt uint32) *runtimeapi.PodSandboxMetadata {
		return &runtimeapi.PodSandboxMetadata{Attempt: attempt}
	}
	ip := func(ip string) *runtimeapi.PodSandboxNetworkStatus {
		return &runtimeapi.PodSandboxNetworkStatus{Ip: ip}
	}
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	cases := []struct {
		name        string
		hostNetwork bool
		sandboxes   []*runtimeapi.PodSandboxStatus
		want        corev1.ConditionStatus
		message     string
	}{
		{"empty pod status", false, nil, corev1.ConditionFalse, podsync.SandboxMessageNone},
		{"sandbox not ready", false, []*runtimeapi.PodSandboxStatus{{Metadata: meta(0), State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}},
			corev1.ConditionFalse, podsync.SandboxMessageNotReady},
		{"multiple ready sandboxes", false, []*runtimeapi.PodSandboxStatus{
			{Network: ip("10.0.0.10"), Metadata: meta(1), State: ready},
			{Network: ip("10.0.0.11"), Metadata: meta(0), State: ready}}, corev1.ConditionFalse, podsync.SandboxMessageMultiple},
		{"ready, network namespace mode changed", true, []*runtimeapi.PodSandboxStatus{{Network: ip("10.0.0.10"), Metadata: meta(0), State: ready,
			Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}}}}},
			corev1.ConditionFalse, podsync.SandboxMessageNetworkNamespace},
		{"sandbox ready, no IP", false, []*runtimeapi.PodSandboxStatus{{Network: ip(""), Metadata: meta(0), State: ready}},
			corev1.ConditionFalse, podsync.SandboxMessageNoIP},
		{"sandbox ready with IP", false, []*runtimeapi.PodSandboxStatus{{Network: ip("10.0.0.10"), Metadata: meta(0), State: ready}},
			corev1.ConditionTrue, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: c.hostNetwork}}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{SandboxStatuses: c.sandboxes}, Now: genNow})
			reason := ""
			if c.want == corev1.ConditionFalse {
				reason = apistatus.PodSandboxNotReady
			}
			if got := cond(s, corev1.PodReadyToStartContainers); got.Status != c.want || got.Reason != reason || got.Message != c.message {
				t.Fatalf("PodReadyToStartContainers %q %q %q, want %q %q %q", got.Status, got.Reason, got.Message, c.want, reason, c.message)
			}
		})
	}
}

// Kubelet's getPhase counts the pod initialised (podHasInitialized) only
// when an app container ran in the newest sandbox and that sandbox is
// ready: its GetPodStatus has no active sandbox, so no active containers,
// when the newest is not ready. A pod whose sidecar runs but has not
// passed its startup probe and whose app container exited is Running while
// its sandbox is ready, and Pending once the sandbox is not.
func TestPhaseActiveContainersNeedAReadySandbox(t *testing.T) {
	t.Parallel()
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
		InitContainers: []corev1.Container{{Name: "side", Image: "envoy:1", RestartPolicy: &always, StartupProbe: &corev1.Probe{}}},
		Containers:     []corev1.Container{{Name: "app", Image: "nginx:1"}}}}
	at := genNow.Add(-time.Minute)
	for _, tc := range []struct {
		name  string
		state runtimeapi.PodSandboxState
		want  corev1.PodPhase
	}{
		{"newest sandbox ready", runtimeapi.PodSandboxState_SANDBOX_READY, corev1.PodRunning},
		{"newest sandbox not ready", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, corev1.PodPending},
	} {
		rs := &podsync.PodStatus{
			SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb0", State: tc.state, Metadata: &runtimeapi.PodSandboxMetadata{},
				Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"}}},
			ContainerStatuses: []*podsync.ContainerStatus{
				{ID: "a1", Name: "app", State: podsync.ContainerStateExited, ExitCode: 1, Reason: "Error", SandboxID: "sb0", CreatedAt: at, StartedAt: at, FinishedAt: at},
				{ID: "s1", Name: "side", State: podsync.ContainerStateRunning, SandboxID: "sb0", CreatedAt: at, StartedAt: at},
			},
		}
		s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Now: genNow})
		if s.Phase != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, s.Phase, tc.want)
		}
	}
}
