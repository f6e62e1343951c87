package apistatus_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/apistatus"
)

// st builds a container status from kubelet's test shorthands:
// run, started, stop (exit 0), fail (exit -1), failN (exit N), wait,
// waitLast (waiting, last exit 0), waitLastFail (waiting, last exit -1).
func st(spec string) corev1.ContainerStatus {
	name, state, _ := strings.Cut(spec, ":")
	s := corev1.ContainerStatus{Name: name}
	switch state {
	case "run":
		s.State.Running = &corev1.ContainerStateRunning{}
	case "started":
		t := true
		s.State.Running, s.Started = &corev1.ContainerStateRunning{}, &t
	case "stop":
		s.State.Terminated = &corev1.ContainerStateTerminated{}
	case "fail":
		s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: -1}
	case "fail42":
		s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 42}
	case "wait":
		s.State.Waiting = &corev1.ContainerStateWaiting{}
	case "waitLast":
		s.State.Waiting = &corev1.ContainerStateWaiting{}
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{}
	case "waitLastFail":
		s.State.Waiting = &corev1.ContainerStateWaiting{}
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: -1}
	default:
		panic("unknown state " + state)
	}
	return s
}

// podSpec: apps and inits by name; an init named side* is a sidecar; a
// container (app or init) name ending in -never, -onfailure or -always has that
// container restart policy.
func podSpec(policy corev1.RestartPolicy, inits, apps string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	pol := func(name string) *corev1.ContainerRestartPolicy {
		for suffix, p := range map[string]corev1.ContainerRestartPolicy{"-never": corev1.ContainerRestartPolicyNever,
			"-onfailure": corev1.ContainerRestartPolicyOnFailure, "-always": corev1.ContainerRestartPolicyAlways} {
			if strings.HasSuffix(name, suffix) {
				return &p
			}
		}
		return nil
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy}}
	for _, n := range strings.Fields(inits) {
		c := corev1.Container{Name: n, RestartPolicy: pol(n)}
		if strings.HasPrefix(n, "side") {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for _, n := range strings.Fields(apps) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, RestartPolicy: pol(n)})
	}
	return pod
}

// Cases from kubelet v1.36.3's TestPodPhaseWith* (kubelet_pods_test.go),
// with container restart rules on, as v1.36 runs.
func TestPhase(t *testing.T) {
	A, N, F := corev1.RestartPolicyAlways, corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure
	cases := []struct {
		name        string
		policy      corev1.RestartPolicy
		inits, apps string
		statuses    string
		terminal    bool
		initialized bool
		want        corev1.PodPhase
	}{
		// TestPodPhaseWithRestartAlways
		{"always: waiting", A, "", "a b", "", false, false, corev1.PodPending},
		{"always: all running", A, "", "a b", "a:run b:run", false, false, corev1.PodRunning},
		{"always: all stopped", A, "", "a b", "a:stop b:stop", false, false, corev1.PodRunning},
		{"always: all succeeded, terminal", A, "", "a b", "a:stop b:stop", true, false, corev1.PodSucceeded},
		{"always: stopped, one failed, terminal", A, "", "a b", "a:stop b:fail", true, false, corev1.PodFailed},
		{"always: mixed #1", A, "", "a b", "a:run b:stop", false, false, corev1.PodRunning},
		{"always: mixed #2", A, "", "a b", "a:run", false, false, corev1.PodPending},
		{"always: mixed #3", A, "", "a b", "a:run b:wait", false, false, corev1.PodPending},
		{"always: crash loop", A, "", "a b", "a:run b:waitLast", false, false, corev1.PodRunning},
		// TestPodPhaseWithRestartAlwaysInitContainers
		{"always init: waiting", A, "i", "a b", "i:wait", false, false, corev1.PodPending},
		{"always init: running", A, "i", "a b", "i:run", false, false, corev1.PodPending},
		{"always init: failed, restarting", A, "i", "a b", "i:fail", false, false, corev1.PodPending},
		{"always init: crash loop", A, "i", "a b", "i:waitLastFail", false, false, corev1.PodPending},
		{"always init: done, apps running", A, "i", "a b", "i:stop a:run b:run", false, false, corev1.PodRunning},
		// TestPodPhaseWithRestartAlwaysRestartableInitContainers
		{"sidecar: waiting", A, "side", "a b", "side:wait", false, false, corev1.PodPending},
		{"sidecar: running, not started", A, "side", "a b", "side:run", false, false, corev1.PodPending},
		{"sidecar: started", A, "side", "a b", "side:started", false, false, corev1.PodPending},
		{"sidecar: started, apps running", A, "side", "a b", "side:started a:run b:run", false, false, corev1.PodRunning},
		{"sidecar: restarting after init", A, "side", "a b", "side:run a:run b:run", false, true, corev1.PodRunning},
		{"sidecar: restarting before init", A, "side", "a b", "side:run a:run b:run", false, false, corev1.PodPending},
		{"sidecar: crash loop, apps running", A, "side", "a b", "side:waitLastFail a:run b:run", false, true, corev1.PodRunning},
		{"sidecar: apps stopped, terminal", A, "side", "a b", "side:stop a:stop b:stop", true, true, corev1.PodSucceeded},
		{"sidecar: apps failed, terminal", A, "side", "a b", "side:stop a:stop b:fail", true, true, corev1.PodFailed},
		// TestPodPhaseWithRestartAlwaysAndPodHasRun
		{"has run: init, sidecar and app running", A, "x side", "a", "x:run side:run a:run", false, false, corev1.PodPending},
		{"has run: app stopped, init and sidecar running", A, "x side", "a", "x:run side:run a:stop", false, false, corev1.PodPending},
		{"has run: re-created sandbox, init done, sidecar running, old app stopped", A, "x side", "a", "x:stop side:run a:stop", false, false, corev1.PodPending},
		{"has run: init done, sidecar running, app stopped", A, "x side", "a", "x:stop side:run a:stop", false, true, corev1.PodRunning},
		{"has run: init done, sidecar and app running", A, "x side", "a", "x:stop side:run a:run", false, true, corev1.PodRunning},
		// TestPodPhaseWithRestartNever
		{"never: waiting", N, "", "a b", "", false, false, corev1.PodPending},
		{"never: all running", N, "", "a b", "a:run b:run", false, false, corev1.PodRunning},
		{"never: all succeeded", N, "", "a b", "a:stop b:stop", false, false, corev1.PodSucceeded},
		{"never: one failed", N, "", "a b", "a:stop b:fail", false, false, corev1.PodFailed},
		{"never: mixed #1", N, "", "a b", "a:run b:stop", false, false, corev1.PodRunning},
		{"never: mixed #2", N, "", "a b", "a:run", false, false, corev1.PodPending},
		{"never: mixed #3", N, "", "a b", "a:run b:wait", false, false, corev1.PodPending},
		// TestPodPhaseWithRestartNeverInitContainers
		{"never init: failed", N, "i", "a b", "i:fail", false, false, corev1.PodFailed},
		{"never init: running", N, "i", "a b", "i:run", false, false, corev1.PodPending},
		{"never init: done, apps succeeded", N, "i", "a b", "i:stop a:stop b:stop", false, false, corev1.PodSucceeded},
		// TestPodPhaseWithRestartNeverRestartableInitContainers
		{"never sidecar: started, apps succeeded", N, "side", "a b", "side:started a:stop b:stop", false, true, corev1.PodRunning},
		{"never sidecar: re-running, apps succeeded", N, "side", "a b", "side:run a:stop b:stop", false, true, corev1.PodRunning},
		{"never sidecar: all succeeded", N, "side", "a b", "side:stop a:stop b:stop", false, true, corev1.PodSucceeded},
		{"never sidecar: sidecar failed, apps succeeded", N, "side", "a b", "side:fail a:stop b:stop", false, true, corev1.PodSucceeded},
		{"never sidecar: crash loop, apps succeeded", N, "side", "a b", "side:waitLastFail a:stop b:stop", false, true, corev1.PodSucceeded},
		{"never sidecar: regular init failed", N, "side i", "a b", "side:started i:fail", false, false, corev1.PodFailed},
		// TestPodPhaseWithRestartOnFailure
		{"onfailure: all succeeded", F, "", "a b", "a:stop b:stop", false, false, corev1.PodSucceeded},
		{"onfailure: one failed, restarting", F, "", "a b", "a:stop b:fail", false, false, corev1.PodRunning},
		{"onfailure: crash loop", F, "", "a b", "a:run b:waitLastFail", false, false, corev1.PodRunning},
		{"onfailure: init failed, restarting", F, "i", "a b", "i:fail", false, false, corev1.PodPending},
		// TestPodPhaseWithContainerRestartPolicy
		{"container Never failed", A, "", "x-never", "x-never:fail", false, true, corev1.PodFailed},
		{"container OnFailure failed", A, "", "x-onfailure", "x-onfailure:fail", false, true, corev1.PodRunning},
		{"container Always failed", A, "", "x-always", "x-always:fail", false, true, corev1.PodRunning},
		{"one restartable container", N, "", "a-always b", "a-always:stop b:fail", false, true, corev1.PodRunning},
		{"none restartable", A, "", "a-never b-onfailure", "a-never:fail b-onfailure:stop", false, true, corev1.PodFailed},
		{"all succeeded with container policies", A, "", "a-never b-onfailure", "a-never:stop b-onfailure:stop", false, true, corev1.PodSucceeded},
		// TestPodPhaseWithContainerRestartPolicyInitContainers
		{"init container with restart policy Never failed", A, "i-never", "c", "i-never:fail", false, true, corev1.PodFailed},
		{"init container with restart policy OnFailure failed", N, "i-onfailure", "c", "i-onfailure:fail", false, true, corev1.PodPending},
		{"init container with restart policy Always failed", N, "side", "c", "side:fail", false, true, corev1.PodPending},
		{"onfailure container exit 42", N, "", "a-onfailure", "a-onfailure:fail42", false, true, corev1.PodRunning},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := podSpec(c.policy, c.inits, c.apps)
			var statuses []corev1.ContainerStatus
			for _, f := range strings.Fields(c.statuses) {
				statuses = append(statuses, st(f))
			}
			if got := apistatus.Phase(pod, statuses, c.terminal, c.initialized); got != c.want {
				t.Fatalf("phase %s, want %s", got, c.want)
			}
		})
	}
}
