package apistatus

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/podsync"
)

// Phase is kubelet's getPhase with container restart rules: the pod's
// phase from its container statuses. terminal: the pod will not run
// again; initialized: an app container ran in the current sandbox.
func Phase(pod *corev1.Pod, statuses []corev1.ContainerStatus, terminal, initialized bool) corev1.PodPhase {
	return phase(pod, statuses, terminal, initialized)
}

func phase(pod *corev1.Pod, info []corev1.ContainerStatus, terminal, initialized bool) corev1.PodPhase {
	spec := &pod.Spec
	pendingSidecars, pendingInits, failedInitNotRestartable := 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if podsync.IsRestartableInitContainer(c) {
			continue
		}
		s, ok := statusOf(info, c.Name)
		if !ok {
			pendingInits++
			continue
		}
		switch {
		case s.State.Running != nil:
			pendingInits++
		case s.State.Terminated != nil:
			if code := s.State.Terminated.ExitCode; code != 0 && !podsync.ContainerShouldRestart(c, spec, code) {
				failedInitNotRestartable++
			}
		case s.State.Waiting != nil:
			if t := s.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 && !podsync.ContainerShouldRestart(c, spec, t.ExitCode) {
					failedInitNotRestartable++
				}
			} else {
				pendingInits++
			}
		default:
			pendingInits++
		}
	}

	unknown, running, waiting, stopped, stoppedNotRestartable, succeeded := 0, 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !podsync.IsRestartableInitContainer(c) {
			continue
		}
		s, ok := statusOf(info, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case s.State.Running != nil:
			if s.Started == nil || !*s.Started {
				pendingSidecars++
			}
			running++
		case s.State.Terminated != nil:
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated == nil {
				pendingSidecars++
				waiting++
			}
		default:
			pendingSidecars++
			unknown++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		s, ok := statusOf(info, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			code := s.State.Terminated.ExitCode
			if !podsync.ContainerShouldRestart(c, spec, code) {
				stoppedNotRestartable++
			}
			if code == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if t := s.LastTerminationState.Terminated; t != nil {
				stopped++
				if !podsync.ContainerShouldRestart(c, spec, t.ExitCode) {
					stoppedNotRestartable++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInitNotRestartable > 0 {
		return corev1.PodFailed
	}
	switch {
	case pendingInits > 0 || pendingSidecars > 0 && !initialized, waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal && !isStatic(pod) {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if stopped != stoppedNotRestartable {
			return corev1.PodRunning // some are restarting
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	}
	return corev1.PodPending
}

// isStatic is kubelet's IsStaticPod: a pod from a file or URL, which
// keeps a non-terminal phase (kubernetes#116484).
func isStatic(pod *corev1.Pod) bool {
	switch pod.Annotations["kubernetes.io/config.source"] {
	case "file", "http":
		return true
	}
	return false
}
