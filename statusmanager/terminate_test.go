package statusmanager

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTerminatePod is kubelet's TestTerminatePod_DefaultUnknownStatus
// (v1.36.3), one row per case, with the phase each case ends in: U is
// ContainerStatusUnknown (137), W waiting, T0/T1/T2 terminated with that
// exit code; inits and apps list the states before and after.
func TestTerminatePod(t *testing.T) {
	state := func(code string) corev1.ContainerState {
		switch code {
		case "W":
			return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
		case "R":
			return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		case "":
			return corev1.ContainerState{}
		}
		var exit int32
		fmt.Sscanf(code, "T%d", &exit)
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}
	}
	type c struct{ state, last string }
	cases := []struct {
		name                  string
		phase                 corev1.PodPhase
		inits, apps           []c
		wantInits, wantApps   []string
		wantPhase             corev1.PodPhase
		noStatuses, sidecarOK bool
	}{
		{name: "failed pod stays failed", phase: corev1.PodFailed, noStatuses: true, wantPhase: corev1.PodFailed},
		{name: "running pod fails", phase: corev1.PodRunning, noStatuses: true, wantPhase: corev1.PodFailed},
		{name: "terminated container kept", phase: corev1.PodRunning, apps: []c{{state: "T2"}}, wantApps: []string{"T2"}, wantPhase: corev1.PodFailed},
		{name: "last termination state set", phase: corev1.PodRunning, apps: []c{{state: "W", last: "T2"}}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
		{name: "no previous state", phase: corev1.PodRunning, apps: []c{{state: "W"}}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
		{name: "uninitialized pod defaults the first init container", phase: corev1.PodPending,
			inits: []c{{state: "W"}}, apps: []c{{state: "W"}}, wantInits: []string{"U"}, wantApps: []string{"W"}, wantPhase: corev1.PodFailed},
		{name: "uninitialized pod defaults only the first init container", phase: corev1.PodPending,
			inits: []c{{state: "W"}, {state: "W"}}, apps: []c{{state: "W"}}, wantInits: []string{"U", "W"}, wantApps: []string{"W"}, wantPhase: corev1.PodFailed},
		{name: "uninitialized pod defaults gaps", phase: corev1.PodPending,
			inits: []c{{state: "W"}, {state: "W"}, {state: "T1"}, {state: "W"}}, apps: []c{{state: "W"}}, wantInits: []string{"U", "U", "T1", "W"}, wantApps: []string{"W"}, wantPhase: corev1.PodFailed},
		{name: "failed last container is uninitialized", phase: corev1.PodPending,
			inits: []c{{state: "W"}, {state: "W"}, {state: "T1"}}, apps: []c{{state: "W"}}, wantInits: []string{"U", "U", "T1"}, wantApps: []string{"W"}, wantPhase: corev1.PodFailed},
		{name: "successful last container is initialized", phase: corev1.PodRunning,
			inits: []c{{state: "W"}, {state: "W"}, {state: "T0"}}, apps: []c{{state: "W"}}, wantInits: []string{"U", "U", "T0"}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
		{name: "successful last previous container is initialized, and container state is overwritten", phase: corev1.PodRunning,
			inits: []c{{state: "W"}, {state: "W"}, {state: "W", last: "T0"}}, apps: []c{{state: "W"}}, wantInits: []string{"U", "U", "U"}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
		{name: "running container proves initialization", phase: corev1.PodRunning,
			inits: []c{{state: "W"}}, apps: []c{{state: "R"}}, wantInits: []string{"U"}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
		{name: "evidence of terminated container proves initialization", phase: corev1.PodRunning,
			inits: []c{{state: "W"}}, apps: []c{{state: "T0"}}, wantInits: []string{"U"}, wantApps: []string{"T0"}, wantPhase: corev1.PodFailed},
		{name: "evidence of previously terminated container proves initialization", phase: corev1.PodRunning,
			inits: []c{{state: "W"}}, apps: []c{{last: "T0"}}, wantInits: []string{"U"}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
		// Not in kubelet's table: a succeeded pod stays succeeded, and a
		// pod that never pulled its image (the node agent's case) fails.
		{name: "succeeded pod stays succeeded", phase: corev1.PodSucceeded, apps: []c{{state: "T0"}}, wantApps: []string{"T0"}, wantPhase: corev1.PodSucceeded},
		{name: "pending pod whose image never pulled", phase: corev1.PodPending, apps: []c{{state: "W"}}, wantApps: []string{"U"}, wantPhase: corev1.PodFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
			pod.Status.Phase = tc.phase
			if tc.noStatuses {
				pod.Spec.Containers = []corev1.Container{{Name: "0"}}
			}
			for i, s := range tc.inits {
				name := fmt.Sprintf("init-%d", i)
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: name})
				pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name, State: state(s.state), LastTerminationState: state(s.last)})
			}
			for i, s := range tc.apps {
				name := fmt.Sprint(i)
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, State: state(s.state), LastTerminationState: state(s.last)})
			}
			got := terminatePod(pod, pod.Status)
			if got.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", got.Phase, tc.wantPhase)
			}
			check := func(kind string, statuses []corev1.ContainerStatus, want []string) {
				for i, w := range want {
					s := statuses[i].State
					switch w {
					case "U":
						if s.Terminated == nil || s.Running != nil || s.Waiting != nil || *s.Terminated != *terminatedUnknown.Terminated {
							t.Errorf("%s %d: %+v, want ContainerStatusUnknown", kind, i, s)
						}
					case "W":
						if s.Waiting == nil || s.Terminated != nil {
							t.Errorf("%s %d: %+v, want waiting", kind, i, s)
						}
					default:
						if s.Terminated == nil || fmt.Sprintf("T%d", s.Terminated.ExitCode) != w || s.Terminated.Reason != "" {
							t.Errorf("%s %d: %+v, want %s", kind, i, s, w)
						}
					}
				}
			}
			check("init container", got.InitContainerStatuses, tc.wantInits)
			check("container", got.ContainerStatuses, tc.wantApps)
			if pod.Status.Phase != tc.phase || (len(tc.apps) > 0 && !reflect.DeepEqual(pod.Status.ContainerStatuses[0].State, state(tc.apps[0].state))) {
				t.Error("the status given was changed")
			}
		})
	}
}
