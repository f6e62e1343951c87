package apistatus_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// Ports of kubelet v1.36.3's status manager tests
// (pkg/kubelet/status/status_manager_test.go): what updateStatusInternal
// and normalizeStatus do to a generated status.

// readyPod is a running pod whose Ready condition follows its one
// container's readiness probe.
func readyPod() *corev1.Pod {
	pod := testPod()
	pod.Spec.Containers = []corev1.Container{{Name: "app", ReadinessProbe: &corev1.Probe{}}}
	return pod
}

type readiness bool

func (r readiness) Readiness(string) (podsync.ProbeResult, bool) {
	if r {
		return podsync.ProbeSuccess, true
	}
	return podsync.ProbeFailure, true
}
func (readiness) Startup(string) (podsync.ProbeResult, bool) { return podsync.ProbeResult(0), false }

func runningApp() *podsync.PodStatus {
	return &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{{ID: "c1", Name: "app", State: podsync.ContainerStateRunning, StartedAt: genNow}}}
}

// TestNewStatusSetsStartTime: TestNewStatus and
// TestNewStatusPreservesPodStartTime, TestChangedStatusKeepsStartTime.
func TestNewStatusSetsStartTime(t *testing.T) {
	t.Parallel()
	now := genNow.Add(500 * time.Millisecond)
	s := apistatus.PodStatus(apistatus.Input{Pod: testPod(), Now: now})
	if s.StartTime == nil || !s.StartTime.Time.Equal(genNow) {
		t.Fatalf("start time %v, want %v (now, to the second)", s.StartTime, genNow)
	}

	pod := testPod()
	start := metav1.NewTime(now.Add(-time.Minute))
	pod.Status.StartTime = &start
	s = apistatus.PodStatus(apistatus.Input{Pod: pod, Now: now})
	if want := start.Rfc3339Copy(); !s.StartTime.Equal(&want) {
		t.Fatalf("start time %v, want the pod's %v", s.StartTime, want)
	}

	// TestChangedStatusKeepsStartTime: the previous status's start time.
	s2 := apistatus.PodStatus(apistatus.Input{Pod: testPod(), Previous: &s, Now: now.Add(time.Hour)})
	if !s2.StartTime.Equal(s.StartTime) {
		t.Fatalf("start time %v, want the previous %v", s2.StartTime, s.StartTime)
	}
}

// TestLastTransitionTime: TestNewStatusSetsReadyTransitionTime,
// TestChangedStatusUpdatesLastTransitionTime,
// TestUnchangedStatusPreservesLastTransitionTime and TestUpdateLastTransitionTime's
// cases, on the Ready condition.
func TestLastTransitionTime(t *testing.T) {
	t.Parallel()
	old := genNow.Add(-time.Hour)
	cases := []struct {
		name     string
		previous *corev1.ConditionStatus // nil: no old condition
		ready    bool
		want     time.Time
	}{
		{"should update last transition time if no old condition", nil, true, genNow},
		{"should update last transition time if condition is changed", ptr(corev1.ConditionFalse), true, genNow},
		{"should keep last transition time if condition is not changed", ptr(corev1.ConditionFalse), false, old},
		{"unchanged True keeps it", ptr(corev1.ConditionTrue), true, old},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := &corev1.PodStatus{}
			if c.previous != nil {
				prev.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: *c.previous, LastTransitionTime: metav1.NewTime(old)}}
			}
			s := apistatus.PodStatus(apistatus.Input{Pod: readyPod(), Status: runningApp(), Previous: prev, Probes: readiness(c.ready), Now: genNow})
			got := cond(s, corev1.PodReady)
			if (got.Status == corev1.ConditionTrue) != c.ready {
				t.Fatalf("Ready %s, want ready=%v", got.Status, c.ready)
			}
			if !got.LastTransitionTime.Time.Equal(c.want) {
				t.Fatalf("last transition %v, want %v", got.LastTransitionTime, c.want)
			}
		})
	}
	// Every kubelet-owned condition gets one.
	s := apistatus.PodStatus(apistatus.Input{Pod: readyPod(), Status: runningApp(), Now: genNow})
	for _, c := range s.Conditions {
		if c.LastTransitionTime.IsZero() {
			t.Errorf("%s has no last transition time", c.Type)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestObservedGeneration: the status manager sets the pod's generation
// (CalculatePodStatusObservedGeneration, PodObservedGenerationTracking GA)
// and never lowers it below the previous status's ("prevent sending
// unnecessary patches"); conditions carry the pod's generation.
func TestObservedGeneration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		gen, previous  int64
		want, wantCond int64
	}{
		{"new pod", 3, 0, 3, 3},
		{"generation grew", 4, 3, 4, 4},
		{"previous status saw a newer generation", 2, 5, 5, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			pod.Generation = c.gen
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Previous: &corev1.PodStatus{ObservedGeneration: c.previous}, Now: genNow})
			if s.ObservedGeneration != c.want {
				t.Fatalf("observed generation %d, want %d", s.ObservedGeneration, c.want)
			}
			for _, pc := range s.Conditions {
				if pc.ObservedGeneration != c.wantCond {
					t.Errorf("%s observed generation %d, want %d", pc.Type, pc.ObservedGeneration, c.wantCond)
				}
			}
		})
	}
}

// TestStatusNormalizationEnforcesMaxBytes: termination messages share
// 12 KiB among the pod's containers (init, app and ephemeral), in state
// and last state. Kubelet's test gives 48 statuses to an empty spec (no
// cut); here the spec has the 48 containers, so each message is cut to
// 12288/48 = 256 bytes.
func TestStatusNormalizationEnforcesMaxBytes(t *testing.T) {
	t.Parallel()
	pod := testPod()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	rs := &podsync.PodStatus{}
	for i := range 48 {
		name := fmt.Sprintf("container%d", i)
		c := corev1.Container{Name: name}
		switch {
		case i < 16:
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		case i < 32:
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		default:
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)})
		}
		// The newest instance says 200+ bytes; the one before it 1000.
		rs.ContainerStatuses = append(rs.ContainerStatuses,
			&podsync.ContainerStatus{ID: name + "-1", Name: name, State: podsync.ContainerStateExited, ExitCode: 1, CreatedAt: genNow,
				Message: strings.Repeat("abcdefgh", 24+i%3+i%2*100)},
			&podsync.ContainerStatus{ID: name + "-0", Name: name, State: podsync.ContainerStateExited, ExitCode: 1, CreatedAt: genNow.Add(-time.Minute),
				Message: strings.Repeat("x", 1000)})
	}
	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Now: genNow})
	total := 0
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		if len(list) != 16 {
			t.Fatalf("%d statuses, want 16", len(list))
		}
		for _, cs := range list {
			for _, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
				if st.Terminated == nil {
					t.Fatalf("%s: not terminated: %+v", cs.Name, st)
				}
				l := len(st.Terminated.Message)
				if l < 192 || l > 256 {
					t.Errorf("%s: message of %d bytes, want 192..256", cs.Name, l)
				}
				total += l
			}
		}
		if l := len(list[1].LastTerminationState.Terminated.Message); l != 256 {
			t.Errorf("a 1000-byte message cut to %d bytes, want 256", l)
		}
	}
	if total > 2*apistatus.MaxPodTerminationMessageLength {
		t.Errorf("%d bytes of messages", total)
	}
}

// TestStatusNormalizeTimeStamp: times in state and last state, start time
// and condition times cut to whole seconds (RFC 3339).
func TestStatusNormalizeTimeStamp(t *testing.T) {
	t.Parallel()
	now := genNow.Add(123456789 * time.Nanosecond)
	pod := testPod()
	pod.Spec.Containers = containers("app")
	rs := &podsync.PodStatus{ContainerStatuses: []*podsync.ContainerStatus{
		{ID: "c2", Name: "app", State: podsync.ContainerStateRunning, StartedAt: now, CreatedAt: now},
		{ID: "c1", Name: "app", State: podsync.ContainerStateExited, StartedAt: now, FinishedAt: now, CreatedAt: now.Add(-time.Second)},
	}}
	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: rs, Now: now})
	app := s.ContainerStatuses[0]
	for what, tm := range map[string]metav1.Time{"running since": app.State.Running.StartedAt, "last started": app.LastTerminationState.Terminated.StartedAt,
		"last finished": app.LastTerminationState.Terminated.FinishedAt, "start time": *s.StartTime, "condition": s.Conditions[0].LastTransitionTime} {
		if !tm.Time.Equal(genNow) {
			t.Errorf("%s %v, want %v", what, tm.Time, genNow)
		}
	}
}

// noResults: probes that have produced nothing yet.
type noResults struct{}

func (noResults) Readiness(string) (podsync.ProbeResult, bool) { return podsync.ProbeResult(0), false }
func (noResults) Startup(string) (podsync.ProbeResult, bool)   { return podsync.ProbeResult(0), false }

// Kubelet's setReadyStateOnKubeletRestart (prober_manager.go; its gate
// ChangeContainerStatusOnKubeletRestart is off in v1.36): a container
// that ran since before the prober started, less 10 s, and has not been
// probed yet keeps the readiness of a pod the API server has Ready.
func TestReadinessKeptAcrossAgentRestart(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		startedAt time.Duration // before the prober start
		podReady  bool
		probes    apistatus.Probes
		noProbe   bool
		want      bool
	}{
		{name: "ran before the restart, pod Ready", startedAt: 5 * time.Minute, podReady: true, probes: noResults{}, want: true},
		{name: "ran before the restart, pod not Ready", startedAt: 5 * time.Minute, probes: noResults{}, want: false},
		{name: "started within the 10 s grace", startedAt: 5 * time.Second, podReady: true, probes: noResults{}, want: false},
		{name: "started after the restart", startedAt: -time.Minute, podReady: true, probes: noResults{}, want: false},
		{name: "already probed: failure", startedAt: 5 * time.Minute, podReady: true, probes: readiness(false), want: false},
		{name: "already probed: success", startedAt: 5 * time.Minute, probes: readiness(true), want: true},
		{name: "no readiness probe", startedAt: -time.Minute, probes: noResults{}, noProbe: true, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := readyPod()
			if c.noProbe {
				pod.Spec.Containers[0].ReadinessProbe = nil
			}
			if c.podReady {
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}
			proberStart := genNow.Add(c.startedAt)
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: runningApp(), Probes: c.probes, ProberStart: proberStart, Now: genNow.Add(time.Hour)})
			if got := s.ContainerStatuses[0].Ready; got != c.want {
				t.Fatalf("ready %v, want %v", got, c.want)
			}
		})
	}
}
