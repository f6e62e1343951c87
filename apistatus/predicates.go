package apistatus

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/podsync"
)

// Terminal reports whether the pod has ended: phase Succeeded or Failed,
// which kubelet never changes again.
func Terminal(s corev1.PodStatus) bool {
	return s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed
}

// Running reports whether pod runs as its spec asks: phase Running, every
// app container and every restartable init container (sidecar) reported
// and running. It does not look at readiness (Ready does).
func Running(pod *corev1.Pod, s corev1.PodStatus) bool {
	if s.Phase != corev1.PodRunning {
		return false
	}
	running := map[string]bool{}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, c := range list {
			running[c.Name] = c.State.Running != nil
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podsync.IsRestartableInitContainer(c) && !running[c.Name] {
			return false
		}
	}
	for _, c := range pod.Spec.Containers {
		if !running[c.Name] {
			return false
		}
	}
	return true
}

// Ready reports whether the pod's Ready condition is True.
func Ready(s corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Settled reports whether another sync of pod now would change nothing:
// the pod is terminal, or it has container statuses and none waits to be
// created (ContainerCreating) or for init containers that are not running
// (PodInitializing), and no container that ended is to be restarted
// (podsync.ContainerShouldRestart). A container running, ended for good,
// or waiting for a reason only time or an outside change ends
// (CrashLoopBackOff, ImagePullBackOff, ErrImagePull,
// CreateContainerConfigError, ...) is settled. Use it to end a loop of
// syncs in a test or a tool.
func Settled(pod *corev1.Pod, s corev1.PodStatus) bool {
	if Terminal(s) {
		return true
	}
	if len(s.ContainerStatuses) == 0 {
		return false
	}
	specs := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		specs[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
	}
	for i := range pod.Spec.Containers {
		specs[pod.Spec.Containers[i].Name] = &pod.Spec.Containers[i]
	}
	initRunning := false
	for _, c := range s.InitContainerStatuses {
		if spec := specs[c.Name]; spec != nil && c.State.Running != nil && !podsync.IsRestartableInitContainer(spec) {
			initRunning = true
		}
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, c := range list {
			if w := c.State.Waiting; w != nil {
				if w.Reason == ContainerCreating || w.Reason == "" || w.Reason == PodInitializing && !initRunning {
					return false
				}
			}
			if t := c.State.Terminated; t != nil {
				spec := specs[c.Name]
				if spec == nil {
					continue
				}
				if restarts(pod, spec, isInit(pod, c.Name), t.ExitCode) {
					return false
				}
			}
		}
	}
	return true
}

// restarts: whether kubelet starts an ended container again. An init
// container that succeeded is done; one that failed is retried unless the
// pod's restartPolicy is Never; sidecars and app containers follow
// podsync.ContainerShouldRestart.
func restarts(pod *corev1.Pod, c *corev1.Container, init bool, exitCode int32) bool {
	if init && !podsync.IsRestartableInitContainer(c) {
		return exitCode != 0 && pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	}
	return podsync.ContainerShouldRestart(c, &pod.Spec, exitCode)
}

func isInit(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
