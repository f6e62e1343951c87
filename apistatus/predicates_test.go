package apistatus_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/apistatus"
)

func TestPredicates(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := func(policy corev1.RestartPolicy, sidecar bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy,
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "app"}}}}
		if sidecar {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "side", RestartPolicy: &always})
		}
		return p
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := func(r string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r}}
	}
	exited := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	cs := func(name string, s corev1.ContainerState) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: s}
	}
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name                              string
		pod                               *corev1.Pod
		status                            corev1.PodStatus
		running, ready, settled, terminal bool
	}{
		{name: "no status yet", pod: pod("Always", false)},
		{name: "pending, creating", pod: pod("Always", false), status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", waiting("PodInitializing"))},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", waiting("PodInitializing"))}}},
		{name: "init running forever", pod: pod("Always", false), settled: true, status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", running)},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", waiting("PodInitializing"))}}},
		{name: "init done, app to start", pod: pod("Always", false), status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", exited(0))},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", waiting("PodInitializing"))}}},
		{name: "init failed, retried", pod: pod("Always", false), status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", exited(1))},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", waiting("PodInitializing"))}}},
		{name: "running and ready", pod: pod("Always", false), running: true, ready: true, settled: true, status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", exited(0))},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", running)}}},
		{name: "sidecar not running", pod: pod("Always", true), settled: false, status: corev1.PodStatus{Phase: corev1.PodRunning,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", exited(0)), cs("side", exited(1))},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", running)}}},
		{name: "sidecar and app running", pod: pod("Always", true), running: true, settled: true, status: corev1.PodStatus{Phase: corev1.PodRunning,
			InitContainerStatuses: []corev1.ContainerStatus{cs("init", exited(0)), cs("side", running)},
			ContainerStatuses:     []corev1.ContainerStatus{cs("app", running)}}},
		{name: "crash loop", pod: pod("Always", false), settled: true, status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", waiting("CrashLoopBackOff"))}}},
		{name: "pull back-off", pod: pod("Always", false), settled: true, status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", waiting("ImagePullBackOff"))}}},
		{name: "creating", pod: pod("Always", false), status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", waiting("ContainerCreating"))}}},
		{name: "exited, to restart", pod: pod("Always", false), status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", exited(0))}}},
		{name: "exited 0 under OnFailure", pod: pod("OnFailure", false), settled: true, status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", exited(0))}}},
		{name: "exited 1 under OnFailure", pod: pod("OnFailure", false), status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", exited(1))}}},
		{name: "succeeded", pod: pod("Never", false), settled: true, terminal: true, status: corev1.PodStatus{Phase: corev1.PodSucceeded,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", exited(0))}}},
		{name: "failed", pod: pod("Never", false), settled: true, terminal: true, status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{cs("app", exited(1))}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apistatus.Running(tc.pod, tc.status); got != tc.running {
				t.Errorf("Running = %v", got)
			}
			if got := apistatus.Ready(tc.status); got != tc.ready {
				t.Errorf("Ready = %v", got)
			}
			if got := apistatus.Settled(tc.pod, tc.status); got != tc.settled {
				t.Errorf("Settled = %v", got)
			}
			if got := apistatus.Terminal(tc.status); got != tc.terminal {
				t.Errorf("Terminal = %v", got)
			}
		})
	}
}
