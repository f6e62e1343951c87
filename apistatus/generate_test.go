package apistatus_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"encoding/json"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"reflect"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// Ports of kubelet v1.36.3's generateAPIPodStatus tests
// (pkg/kubelet/kubelet_test.go). Kubelet's runtime statuses are listed
// newest first and carry no creation time; podsync's are sorted by
// CreatedAt, so an instance listed earlier here is made newer.

var genNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// instance is a runtime container instance in kubelet's test shorthand.
type instance struct {
	name      string
	state     podsync.ContainerState
	exitCode  int
	startedAt time.Time
	id        string
}

// generate is kubelet's generateAPIPodStatus for pod and instances (newest
// first), with reasons as its reason cache.
func generate(pod *corev1.Pod, instances []instance, reasons map[string]error) corev1.PodStatus {
	rs := &podsync.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	for i, in := range instances {
		rs.ContainerStatuses = append(rs.ContainerStatuses, &podsync.ContainerStatus{
			ID: in.id, Name: in.name, State: in.state, ExitCode: in.exitCode, StartedAt: in.startedAt,
			CreatedAt: genNow.Add(-time.Duration(i) * time.Minute),
		})
	}
	rr := map[string]apistatus.Reason{}
	for n, err := range reasons {
		rr[n] = apistatus.Reason{Err: err}
	}
	return apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Reasons: rr, Now: genNow})
}

// emptyID is the container ID of a runtime instance without an ID (kubelet's
// tests expect "://", its empty ContainerID; podstart names the runtime).
const emptyID = "containerd://"

func terminated(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, ContainerID: emptyID}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// verifyContainerStatuses is kubelet's: state and last state by name.
func verifyContainerStatuses(t *testing.T, statuses []corev1.ContainerStatus, state, last map[string]corev1.ContainerState) {
	t.Helper()
	if len(statuses) != len(state) {
		t.Errorf("%d statuses, want %d", len(statuses), len(state))
	}
	for _, s := range statuses {
		if diff := diff(state[s.Name], s.State); diff != "" {
			t.Errorf("%s: state (-kubelet +podstart):\n%s", s.Name, diff)
		}
		if diff := diff(last[s.Name], s.LastTerminationState); diff != "" {
			t.Errorf("%s: last termination state (-kubelet +podstart):\n%s", s.Name, diff)
		}
	}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "12345678", Name: "foo", Namespace: "new"}}
}

// TestGenerateAPIPodStatusWithSortedContainers: app container statuses in
// name order whatever order the runtime lists them in.
func TestGenerateAPIPodStatusWithSortedContainers(t *testing.T) {
	t.Parallel()
	pod := testPod()
	var want []string
	var instances []instance
	for i := range 10 {
		name := fmt.Sprintf("%dcontainer", i)
		want = append(want, name)
		in := instance{name: name, id: fmt.Sprint(i)}
		if i%2 == 0 {
			instances = append(instances, in)
		} else {
			instances = append([]instance{in}, instances...)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
	}
	// Kubelet's spec lists the containers in name order already; reversed
	// too here, so that the sort itself is tested.
	reversed := pod.DeepCopy()
	for i, j := 0, len(reversed.Spec.Containers)-1; i < j; i, j = i+1, j-1 {
		reversed.Spec.Containers[i], reversed.Spec.Containers[j] = reversed.Spec.Containers[j], reversed.Spec.Containers[i]
	}
	for i := range 10 {
		p := pod
		if i%2 == 1 {
			p = reversed
		}
		s := generate(p, instances, nil)
		var got []string
		for _, c := range s.ContainerStatuses {
			got = append(got, c.Name)
		}
		if diff := diff(want, got); diff != "" {
			t.Fatalf("order (-kubelet +podstart):\n%s", diff)
		}
	}
}

// TestGenerateAPIPodStatusWithReasonCache: state and last state from the
// runtime's instances, the previous status and the reason cache, for app
// and then init containers. Kubelet's test expects a running container's
// start time with its nanoseconds; PodStatus includes the status
// manager's normalisation, so whole seconds.
func TestGenerateAPIPodStatusWithReasonCache(t *testing.T) {
	t.Parallel()
	testTimestamp := time.Unix(123456789, 987654321)
	testErr := errors.New("test-error")
	cases := []struct {
		name              string
		containers        []corev1.Container
		instances         []instance
		reasons           map[string]error
		oldStatuses       []corev1.ContainerStatus
		wantState         map[string]corev1.ContainerState
		wantInitState     map[string]corev1.ContainerState // when it differs
		wantLastTermState map[string]corev1.ContainerState
	}{
		{
			name:        "no instance: waiting, last state from the old status",
			containers:  containers("without-old-record", "with-old-record"),
			oldStatuses: []corev1.ContainerStatus{{Name: "with-old-record", LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
			wantState: map[string]corev1.ContainerState{
				"without-old-record": waiting(apistatus.ContainerCreating), "with-old-record": waiting(apistatus.ContainerCreating)},
			wantInitState: map[string]corev1.ContainerState{
				"without-old-record": waiting(apistatus.PodInitializing), "with-old-record": waiting(apistatus.PodInitializing)},
			wantLastTermState: map[string]corev1.ContainerState{"with-old-record": {Terminated: &corev1.ContainerStateTerminated{}}},
		},
		{
			name:       "running: last state from the latest exited instance",
			containers: containers("running"),
			instances: []instance{
				{name: "running", state: podsync.ContainerStateRunning, startedAt: testTimestamp},
				{name: "running", state: podsync.ContainerStateExited, exitCode: 1},
			},
			wantState:         map[string]corev1.ContainerState{"running": {Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testTimestamp).Rfc3339Copy()}}},
			wantLastTermState: map[string]corev1.ContainerState{"running": terminated(1)},
		},
		{
			name:       "terminated: with a start failure waiting, else terminated; OnFailure exit 0 stays terminated",
			containers: containers("without-reason", "with-reason"),
			instances: []instance{
				{name: "without-reason", state: podsync.ContainerStateExited, exitCode: 1},
				{name: "with-reason", state: podsync.ContainerStateExited, exitCode: 2},
				{name: "without-reason", state: podsync.ContainerStateExited, exitCode: 3},
				{name: "with-reason", state: podsync.ContainerStateExited, exitCode: 4},
				{name: "succeed", state: podsync.ContainerStateExited, exitCode: 0},
				{name: "succeed", state: podsync.ContainerStateExited, exitCode: 5},
			},
			reasons:           map[string]error{"with-reason": testErr, "succeed": testErr},
			wantState:         map[string]corev1.ContainerState{"without-reason": terminated(1), "with-reason": waiting(testErr.Error())},
			wantLastTermState: map[string]corev1.ContainerState{"without-reason": terminated(3), "with-reason": terminated(2)},
		},
		{
			name:       "unknown after running: terminated, not waiting",
			containers: containers("unknown"),
			instances: []instance{
				{name: "unknown", state: podsync.ContainerStateUnknown},
				{name: "unknown", state: podsync.ContainerStateRunning},
			},
			oldStatuses: []corev1.ContainerStatus{{Name: "unknown", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
			wantState: map[string]corev1.ContainerState{"unknown": {Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Message: "The container could not be located when the pod was terminated", Reason: "ContainerStatusUnknown"}}},
			wantLastTermState: map[string]corev1.ContainerState{"unknown": {Running: &corev1.ContainerStateRunning{}}},
		},
	}
	pod := testPod()
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.Containers = c.containers
			p.Status.ContainerStatuses = c.oldStatuses
			s := generate(p, c.instances, c.reasons)
			verifyContainerStatuses(t, s.ContainerStatuses, c.wantState, c.wantLastTermState)
		})
	}
	// "Everything should be the same for init containers": kubelet's loop
	// keeps the last case's app containers and old statuses in the pod.
	last := cases[len(cases)-1]
	for _, c := range cases {
		t.Run("init/"+c.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.Containers = last.containers
			p.Status.ContainerStatuses = last.oldStatuses
			p.Spec.InitContainers = c.containers
			p.Status.InitContainerStatuses = c.oldStatuses
			s := generate(p, c.instances, c.reasons)
			want := c.wantState
			if c.wantInitState != nil {
				want = c.wantInitState
			}
			verifyContainerStatuses(t, s.InitContainerStatuses, want, c.wantLastTermState)
		})
	}
}

// restartInstances are the instances of kubelet's
// TestGenerateAPIPodStatusWithDifferentRestartPolicies and
// TestGenerateAPIPodStatusWithContainerRestartPolicies, both containers
// with a start failure in the reason cache.
var restartInstances = []instance{
	{name: "succeed", state: podsync.ContainerStateExited, exitCode: 0},
	{name: "failed", state: podsync.ContainerStateExited, exitCode: 1},
	{name: "succeed", state: podsync.ContainerStateExited, exitCode: 2},
	{name: "failed", state: podsync.ContainerStateExited, exitCode: 3},
}

func TestGenerateAPIPodStatusWithDifferentRestartPolicies(t *testing.T) {
	t.Parallel()
	testErr := errors.New("test-error")
	reasons := map[string]error{"succeed": testErr, "failed": testErr}
	cases := []struct {
		policy                      corev1.RestartPolicy
		wantState, wantLast         map[string]corev1.ContainerState
		wantInitState, wantInitLast map[string]corev1.ContainerState // when they differ
	}{
		{
			policy:    corev1.RestartPolicyNever,
			wantState: map[string]corev1.ContainerState{"succeed": terminated(0), "failed": terminated(1)},
			wantLast:  map[string]corev1.ContainerState{"succeed": terminated(2), "failed": terminated(3)},
		},
		{
			policy:    corev1.RestartPolicyOnFailure,
			wantState: map[string]corev1.ContainerState{"succeed": terminated(0), "failed": waiting(testErr.Error())},
			wantLast:  map[string]corev1.ContainerState{"succeed": terminated(2), "failed": terminated(1)},
		},
		{
			policy:    corev1.RestartPolicyAlways,
			wantState: map[string]corev1.ContainerState{"succeed": waiting(testErr.Error()), "failed": waiting(testErr.Error())},
			wantLast:  map[string]corev1.ContainerState{"succeed": terminated(0), "failed": terminated(1)},
			// An init container that exited 0 is not restarted, even with
			// restart policy Always.
			wantInitState: map[string]corev1.ContainerState{"succeed": terminated(0), "failed": waiting(testErr.Error())},
			wantInitLast:  map[string]corev1.ContainerState{"succeed": terminated(2), "failed": terminated(1)},
		},
	}
	for _, c := range cases {
		t.Run(string(c.policy), func(t *testing.T) {
			pod := testPod()
			pod.Spec.RestartPolicy = c.policy
			pod.Spec.Containers = containers("succeed", "failed")
			verifyContainerStatuses(t, generate(pod, restartInstances, reasons).ContainerStatuses, c.wantState, c.wantLast)

			pod.Spec.InitContainers, pod.Spec.Containers = pod.Spec.Containers, nil
			state, last := c.wantState, c.wantLast
			if c.wantInitState != nil {
				state, last = c.wantInitState, c.wantInitLast
			}
			verifyContainerStatuses(t, generate(pod, restartInstances, reasons).InitContainerStatuses, state, last)
		})
	}
}

func TestGenerateAPIPodStatusWithContainerRestartPolicies(t *testing.T) {
	t.Parallel()
	testErr := errors.New("test-error")
	reasons := map[string]error{"succeed": testErr, "failed": testErr}
	never, onFailure, always := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyAlways
	restartOn := func(codes ...int32) []corev1.ContainerRestartRule {
		return []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}}}
	}
	cases := []struct {
		name                string
		containers          []corev1.Container
		wantState, wantLast map[string]corev1.ContainerState
	}{
		{
			name:       "container restart policy rules match",
			containers: []corev1.Container{{Name: "failed", RestartPolicy: &never, RestartPolicyRules: restartOn(1)}},
			wantState:  map[string]corev1.ContainerState{"failed": waiting(testErr.Error())},
			wantLast:   map[string]corev1.ContainerState{"failed": terminated(1)},
		},
		{
			name:       "container restart policy rules not match",
			containers: []corev1.Container{{Name: "failed", RestartPolicy: &never, RestartPolicyRules: restartOn(2)}},
			wantState:  map[string]corev1.ContainerState{"failed": terminated(1)},
			wantLast:   map[string]corev1.ContainerState{"failed": terminated(3)},
		},
		{
			name:       "container restart policy never",
			containers: []corev1.Container{{Name: "succeed", RestartPolicy: &never}, {Name: "failed", RestartPolicy: &never}},
			wantState:  map[string]corev1.ContainerState{"succeed": terminated(0), "failed": terminated(1)},
			wantLast:   map[string]corev1.ContainerState{"succeed": terminated(2), "failed": terminated(3)},
		},
		{
			name:       "container restart policy OnFailure",
			containers: []corev1.Container{{Name: "succeed", RestartPolicy: &onFailure}, {Name: "failed", RestartPolicy: &onFailure}},
			wantState:  map[string]corev1.ContainerState{"succeed": terminated(0), "failed": waiting(testErr.Error())},
			wantLast:   map[string]corev1.ContainerState{"succeed": terminated(2), "failed": terminated(1)},
		},
		{
			name:       "container restart policy Always",
			containers: []corev1.Container{{Name: "succeed", RestartPolicy: &always}, {Name: "failed", RestartPolicy: &always}},
			wantState:  map[string]corev1.ContainerState{"succeed": waiting(testErr.Error()), "failed": waiting(testErr.Error())},
			wantLast:   map[string]corev1.ContainerState{"succeed": terminated(0), "failed": terminated(1)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
			pod.Spec.Containers = c.containers
			verifyContainerStatuses(t, generate(pod, restartInstances, reasons).ContainerStatuses, c.wantState, c.wantLast)
		})
	}
}

// diff reports want and got, as JSON, when they differ.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	return fmt.Sprintf("kubelet:  %s\npodstart: %s", w, g)
}

// TestConvertToAPIContainerStatuses ports kubelet v1.36.3's cases of
// TestConvertToAPIContainerStatuses that do not restart all containers in
// place (RestartAllContainers is not built; see the package doc); the two
// "no current status" cases are in TestGenerateAPIPodStatusPhaseAndConditions.
// As kubelet's test, container IDs and resources are not compared; nor
// are started and ready, which kubelet's function leaves to its prober.
func TestConvertToAPIContainerStatuses(t *testing.T) {
	t.Parallel()
	desired := corev1.PodSpec{NodeName: "machine", Containers: containers("containerA", "containerB"), RestartPolicy: corev1.RestartPolicyAlways}
	withInit := corev1.PodSpec{NodeName: "machine", InitContainers: containers("init-1"), Containers: containers("containerA"), RestartPolicy: corev1.RestartPolicyAlways}
	withSidecar := corev1.PodSpec{NodeName: "machine", InitContainers: sidecars("sidecar-1"), Containers: containers("containerA"), RestartPolicy: corev1.RestartPolicyAlways}
	appRunning := []*podsync.ContainerStatus{{ID: "foo", Name: "containerA", StartedAt: time.Unix(1, 0).UTC(), State: podsync.ContainerStateRunning}}
	cases := []struct {
		name      string
		spec      corev1.PodSpec
		instances []*podsync.ContainerStatus
		previous  corev1.PodStatus
		init      bool
		want      []corev1.ContainerStatus
	}{
		{
			name:     "no current status, keeping previous restartCount",
			spec:     desired,
			previous: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{withRestartCount(failedState("containerA", -1), 5), withRestartCount(failedState("containerB", -1), 5)}},
			want:     []corev1.ContainerStatus{withRestartCount(failedState("containerA", -1), 5), withRestartCount(failedState("containerB", -1), 5)},
		},
		{
			name: "currently running with lower restartCount; should keeping previous restartCount",
			spec: desired,
			instances: []*podsync.ContainerStatus{{ID: "containerA", Name: "containerA", State: podsync.ContainerStateRunning},
				{ID: "containerB", Name: "containerB", State: podsync.ContainerStateRunning}},
			previous: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{withRestartCount(failedState("containerA", -1), 5), withRestartCount(failedState("containerB", -1), 5)}},
			want: []corev1.ContainerStatus{
				withRestartCount(withLastState(runningState("containerA"), corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: -1}}), 6),
				withRestartCount(withLastState(runningState("containerB"), corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: -1}}), 6)},
		},
		{
			name:      "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
			spec:      withInit,
			instances: appRunning,
			init:      true,
			want: []corev1.ContainerStatus{{Name: "init-1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0,
				Message: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"}}}},
		},
		{
			name:      "Unable to get sidecar container status from container runtime and pod has been initialized, sidecar container should be waiting",
			spec:      withSidecar,
			instances: appRunning,
			init:      true,
			want:      []corev1.ContainerStatus{{Name: "sidecar-1", State: waiting(apistatus.PodInitializing)}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "my-pod"}, Spec: c.spec}
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{ContainerStatuses: c.instances}, Previous: c.previous.DeepCopy(), Now: genNow})
			got := s.ContainerStatuses
			if c.init {
				got = s.InitContainerStatuses
			}
			for i := range got {
				got[i].ContainerID, got[i].Resources, got[i].AllocatedResources, got[i].Started, got[i].Ready = "", nil, nil, nil, false
				if got[i].State.Terminated != nil {
					got[i].State.Terminated.ContainerID = ""
				}
			}
			if d := diff(c.want, got); d != "" {
				t.Fatal(d)
			}
		})
	}
}
