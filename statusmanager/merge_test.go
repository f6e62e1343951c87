package statusmanager

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// runningStatus is kubelet's status_manager_test getPodStatus.
func runningStatus() corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		},
		Message: "Message",
	}
}

func withCondition(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) func(corev1.PodStatus) corev1.PodStatus {
	return func(in corev1.PodStatus) corev1.PodStatus {
		in.Conditions = append(in.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
		return in
	}
}

func failedWith(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) func(corev1.PodStatus) corev1.PodStatus {
	return func(in corev1.PodStatus) corev1.PodStatus {
		in.Phase = corev1.PodFailed
		return withCondition(t, s, reason)(in)
	}
}

func same(in corev1.PodStatus) corev1.PodStatus { return in }

type cond = corev1.PodCondition

var (
	readyT        = cond{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	readyFailed   = cond{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodFailed"}
	scheduled     = cond{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	crFailed      = cond{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodFailed"}
	byKubeletDT   = cond{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}
	evictedDT     = cond{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictedByEvictionAPI"}
	featureT      = cond{Type: "example.com/feature", Status: corev1.ConditionTrue}
	featureF      = cond{Type: "example.com/feature", Status: corev1.ConditionFalse}
	runningPhase  = corev1.PodRunning
	failedPhase   = corev1.PodFailed
	messageStatus = "Message"
)

// TestMergePodStatus is kubelet's TestMergePodStatus.
func TestMergePodStatus(t *testing.T) {
	tests := []struct {
		name       string
		running    bool
		old, new   func(corev1.PodStatus) corev1.PodStatus
		wantPhase  corev1.PodPhase
		wantReason string
		wantMsg    string
		want       []cond
	}{
		{"no change", false, same, same, runningPhase, "", messageStatus, []cond{readyT, scheduled}},
		{"add DisruptionTarget condition when transitioning into failed phase", false, same,
			failedWith(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet"),
			failedPhase, "", messageStatus, []cond{byKubeletDT, readyFailed, scheduled, crFailed}},
		{"don't add DisruptionTarget condition when transitioning into failed phase, but there might still be running containers", true, same,
			failedWith(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet"),
			runningPhase, "", messageStatus, []cond{readyT, scheduled}},
		{"preserve DisruptionTarget condition", false,
			withCondition(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet"), same,
			runningPhase, "", messageStatus, []cond{readyT, scheduled, byKubeletDT}},
		{"override DisruptionTarget condition", false,
			withCondition(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictedByEvictionAPI"),
			failedWith(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet"),
			failedPhase, "", messageStatus, []cond{readyFailed, crFailed, scheduled, byKubeletDT}},
		{"don't override DisruptionTarget condition when remaining in running phase", false,
			withCondition(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictedByEvictionAPI"),
			withCondition(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet"),
			runningPhase, "", messageStatus, []cond{evictedDT, readyT, scheduled}},
		{"don't override DisruptionTarget condition when transitioning to failed phase but there might still be running containers", true,
			withCondition(corev1.DisruptionTarget, corev1.ConditionTrue, "EvictedByEvictionAPI"),
			failedWith(corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet"),
			runningPhase, "", messageStatus, []cond{evictedDT, readyT, scheduled}},
		{"readiness changes", false, same,
			func(in corev1.PodStatus) corev1.PodStatus { in.Conditions[0].Status = corev1.ConditionFalse; return in },
			runningPhase, "", messageStatus, []cond{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, scheduled}},
		{"additional pod condition", false, withCondition("example.com/feature", corev1.ConditionTrue, ""), same,
			runningPhase, "", messageStatus, []cond{readyT, scheduled, featureT}},
		{"additional pod condition and readiness changes", false, withCondition("example.com/feature", corev1.ConditionTrue, ""),
			func(in corev1.PodStatus) corev1.PodStatus { in.Conditions[0].Status = corev1.ConditionFalse; return in },
			runningPhase, "", messageStatus, []cond{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, scheduled, featureT}},
		{"additional pod condition changes", false, withCondition("example.com/feature", corev1.ConditionTrue, ""),
			withCondition("example.com/feature", corev1.ConditionFalse, ""),
			runningPhase, "", messageStatus, []cond{readyT, scheduled, featureT}},
		{"phase is transitioning to failed and no containers running", false,
			func(in corev1.PodStatus) corev1.PodStatus {
				in.Phase, in.Reason, in.Message = corev1.PodRunning, "Unknown", "Message"
				return in
			},
			func(in corev1.PodStatus) corev1.PodStatus {
				in.Phase, in.Reason, in.Message = corev1.PodFailed, "Evicted", "Was Evicted"
				return in
			},
			failedPhase, "Evicted", "Was Evicted", []cond{readyFailed, crFailed, scheduled}},
		{"phase is transitioning to failed and containers running", true,
			func(in corev1.PodStatus) corev1.PodStatus {
				in.Phase, in.Reason, in.Message = corev1.PodRunning, "Unknown", "Message"
				return in
			},
			func(in corev1.PodStatus) corev1.PodStatus {
				in.Phase, in.Reason, in.Message = corev1.PodFailed, "Evicted", "Was Evicted"
				return in
			},
			runningPhase, "Unknown", "Message", []cond{readyT, scheduled}},
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old(runningStatus())
			oldCopy := old.DeepCopy()
			pod := &corev1.Pod{Status: old}
			got := merge(pod, old, tc.new(runningStatus()), tc.running, now)
			if got.Phase != tc.wantPhase || got.Reason != tc.wantReason || got.Message != tc.wantMsg {
				t.Errorf("phase %q reason %q message %q, want %q %q %q", got.Phase, got.Reason, got.Message, tc.wantPhase, tc.wantReason, tc.wantMsg)
			}
			// As kubelet's conditionsEqual: the same types, each with the
			// same status and reason, in any order.
			if len(got.Conditions) != len(tc.want) {
				t.Fatalf("conditions %+v, want %+v", got.Conditions, tc.want)
			}
			for _, w := range tc.want {
				_, c := findCondition(got.Conditions, w.Type)
				if c == nil || c.Status != w.Status || c.Reason != w.Reason {
					t.Errorf("condition %s = %+v, want %+v", w.Type, c, w)
				}
			}
			if !reflect.DeepEqual(&old, oldCopy) {
				t.Error("merge changed the old status")
			}
		})
	}
}

// TestMergeStampsTimes: a terminal pod's Ready conditions, set to False,
// get the merge's time if they were True (else keep theirs, as
// podutil.UpdatePodCondition), and a DisruptionTarget sent late gets it.
func TestMergeStampsTimes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	old := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []cond{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: earlier},
	}}
	next := corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: []cond{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, LastTransitionTime: earlier},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
	}}
	got := merge(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, old, next, false, now)
	for _, want := range []cond{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(now)},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", ObservedGeneration: 3, LastTransitionTime: earlier},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)},
	} {
		_, c := findCondition(got.Conditions, want.Type)
		if c == nil || !cmp.Equal(*c, want) {
			t.Errorf("%s: %s", want.Type, cmp.Diff(want, c))
		}
	}
}

// TestStatusPatch is kubelet's TestPatchPodStatus (pkg/util/pod).
func TestStatusPatch(t *testing.T) {
	base := func() corev1.PodStatus {
		s := runningStatus()
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "container1", Ready: true}, {Name: "container2", Ready: true}}
		return s
	}
	tests := []struct {
		name      string
		mutate    func(corev1.PodStatus) corev1.PodStatus
		unchanged bool
		want      string
	}{
		{"no change", same, true, `{"metadata":{"uid":"myuid"}}`},
		{"message change", func(in corev1.PodStatus) corev1.PodStatus { in.Message = "random message"; return in }, false,
			`{"metadata":{"uid":"myuid"},"status":{"message":"random message"}}`},
		{"pod condition change", func(in corev1.PodStatus) corev1.PodStatus { in.Conditions[0].Status = corev1.ConditionFalse; return in }, false,
			`{"metadata":{"uid":"myuid"},"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"PodScheduled"}],"conditions":[{"status":"False","type":"Ready"}]}}`},
		{"additional init container condition", func(in corev1.PodStatus) corev1.PodStatus {
			in.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init-container", Ready: true}}
			return in
		}, false,
			`{"metadata":{"uid":"myuid"},"status":{"initContainerStatuses":[{"image":"","imageID":"","lastState":{},"name":"init-container","ready":true,"restartCount":0,"state":{}}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, unchanged, err := StatusPatch("myuid", base(), tc.mutate(base()))
			if err != nil {
				t.Fatal(err)
			}
			if unchanged != tc.unchanged || string(patch) != tc.want {
				t.Errorf("patch %s (unchanged %v), want %s (%v)", patch, unchanged, tc.want, tc.unchanged)
			}
		})
	}
}

// TestStatusEquality is kubelet's TestStatusEquality.
func TestStatusEquality(t *testing.T) {
	var containers []corev1.Container
	var statuses []corev1.ContainerStatus
	for i := range 10 {
		name := fmt.Sprintf("container%d", i)
		containers = append(containers, corev1.Container{Name: name})
		statuses = append(statuses, corev1.ContainerStatus{Name: name})
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers}}
	shuffle := func(in []corev1.ContainerStatus) []corev1.ContainerStatus {
		out := append([]corev1.ContainerStatus(nil), in...)
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	status := corev1.PodStatus{ContainerStatuses: statuses, InitContainerStatuses: statuses, EphemeralContainerStatuses: statuses}
	for range 10 {
		old := corev1.PodStatus{ContainerStatuses: shuffle(statuses), InitContainerStatuses: shuffle(statuses), EphemeralContainerStatuses: shuffle(statuses)}
		apistatus.Normalize(pod, &old)
		apistatus.Normalize(pod, &status)
		if !equalByKubelet(&old, &status) {
			t.Fatal("order of container statuses should not affect normalized equality")
		}
	}
	old := status
	status.Conditions = append(status.Conditions, featureT)
	old.Conditions = append(status.Conditions, featureF)
	apistatus.Normalize(pod, &old)
	apistatus.Normalize(pod, &status)
	if !equalByKubelet(&old, &status) {
		t.Fatal("differences in pod conditions not owned by kubelet should not affect equality")
	}
	old.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "my-claim", ResourceClaimName: ptr.To("claim")}}
	old.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{
		RequestMappings:   []corev1.ContainerExtendedResourceRequest{{RequestName: "request", ContainerName: "c", ResourceName: "example.com/gpu"}},
		ResourceClaimName: "claim",
	}
	old.NodeAllocatableResourceClaimStatuses = []corev1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "my-claim", Containers: []string{"ctr0"}}}
	if !equalByKubelet(&old, &status) {
		t.Fatal("differences in resource claim statuses should not affect equality")
	}
	// Kubelet's own conditions: status, reason and message count, times not.
	a := corev1.PodStatus{Conditions: []cond{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	b := corev1.PodStatus{Conditions: []cond{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if !equalByKubelet(&a, &b) {
		t.Error("transition times should not affect equality")
	}
	b.Conditions[0].Reason = "x"
	if equalByKubelet(&a, &b) {
		t.Error("a reason of a kubelet condition should")
	}
	b = corev1.PodStatus{Conditions: []cond{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, byKubeletDT}}
	if equalByKubelet(&a, &b) {
		t.Error("a DisruptionTarget condition should")
	}
}

// TestStatusNormalizationEnforcesMaxBytes is kubelet's.
func TestStatusNormalizationEnforcesMaxBytes(t *testing.T) {
	var statuses []corev1.ContainerStatus
	for i := range 48 {
		statuses = append(statuses, corev1.ContainerStatus{Name: fmt.Sprintf("container%d", i),
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: strings.Repeat("abcdefgh", 24+i%3)}}})
	}
	status := corev1.PodStatus{InitContainerStatuses: statuses[:16], ContainerStatuses: statuses[16:32], EphemeralContainerStatuses: statuses[32:]}
	apistatus.Normalize(&corev1.Pod{}, &status)
	count := 0
	for _, s := range status.InitContainerStatuses {
		l := len(s.LastTerminationState.Terminated.Message)
		if l < 192 || l > 256 {
			t.Errorf("container message had length %d", l)
		}
		count += l
	}
	if count > apistatus.MaxPodTerminationMessageLength {
		t.Error("message length not truncated")
	}
	// With containers in the spec, each status gets its share.
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: make([]corev1.Container, 64)}}
	s := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: strings.Repeat("x", 500)}}}}}
	apistatus.Normalize(pod, &s)
	if l := len(s.ContainerStatuses[0].State.Terminated.Message); l != 192 {
		t.Errorf("message cut to %d, want 192", l)
	}
}

// TestStatusNormalizeTimeStamp is kubelet's.
func TestStatusNormalizeTimeStamp(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 678, time.UTC))
	exp := now.Rfc3339Copy()
	states := func(at metav1.Time) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{
			{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}},
			{Name: "b", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at, FinishedAt: at}}},
		}
	}
	status := corev1.PodStatus{StartTime: &now, ContainerStatuses: states(now), InitContainerStatuses: states(now), EphemeralContainerStatuses: states(now),
		Conditions: []cond{{Type: corev1.PodReady, LastProbeTime: now, LastTransitionTime: now}}}
	want := corev1.PodStatus{StartTime: &exp, ContainerStatuses: states(exp), InitContainerStatuses: states(exp), EphemeralContainerStatuses: states(exp),
		Conditions: []cond{{Type: corev1.PodReady, LastProbeTime: exp, LastTransitionTime: exp}}}
	apistatus.Normalize(&corev1.Pod{}, &status)
	if !equalByKubelet(&want, &status) || !status.StartTime.Equal(&exp) || !status.Conditions[0].LastTransitionTime.Equal(&exp) {
		t.Errorf("not normalised: %s", cmp.Diff(want, status))
	}
}

func TestNormalizeSortsInitStatusesBySpec(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "z"}, {Name: "a"}, {Name: "m"}}}}
	s := corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: "m"}, {Name: "a"}, {Name: "z"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "b"}, {Name: "a"}}}
	apistatus.Normalize(pod, &s)
	var got []string
	for _, c := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
		got = append(got, c.Name)
	}
	if strings.Join(got, ",") != "z,a,m,a,b" {
		t.Errorf("order %v", got)
	}
}

// TestCanBeDeleted follows kubelet's TestDeletePodBeforeFinished,
// TestDeletePodFinished and canBeDeleted's rules.
func TestCanBeDeleted(t *testing.T) {
	ts := &metav1.Time{Time: time.Now()}
	tests := []struct {
		name     string
		deletion *metav1.Time
		phase    corev1.PodPhase
		finished bool
		want     bool
	}{
		{"not being deleted", nil, corev1.PodFailed, true, false},
		{"phase not terminal in the API", ts, corev1.PodRunning, true, false},
		{"not finished (before TerminatePod)", ts, corev1.PodFailed, false, false},
		{"failed and finished", ts, corev1.PodFailed, true, true},
		{"succeeded and finished", ts, corev1.PodSucceeded, true, true},
	}
	for _, tc := range tests {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: tc.deletion}, Status: corev1.PodStatus{Phase: tc.phase}}
		if got := canBeDeleted(pod, tc.finished); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCouldHaveRunningContainers(t *testing.T) {
	st := func(states ...podsync.ContainerState) *podsync.PodStatus {
		s := &podsync.PodStatus{}
		for _, state := range states {
			s.ContainerStatuses = append(s.ContainerStatuses, &podsync.ContainerStatus{State: state})
		}
		return s
	}
	tests := []struct {
		name string
		st   podworker.PodState
		want bool
	}{
		{"before the first sync", podworker.PodState{}, true},
		{"removed", podworker.PodState{Removed: true, Status: st(podsync.ContainerStateRunning)}, false},
		{"a container running", podworker.PodState{Status: st(podsync.ContainerStateExited, podsync.ContainerStateRunning)}, true},
		{"a container unknown", podworker.PodState{Status: st(podsync.ContainerStateUnknown)}, true},
		{"all exited or created", podworker.PodState{Status: st(podsync.ContainerStateExited, podsync.ContainerStateCreated)}, false},
	}
	for _, tc := range tests {
		if got := couldHaveRunningContainers(tc.st); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
