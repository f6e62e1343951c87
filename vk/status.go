package vk

import (
	corev1 "k8s.io/api/core/v1"
)

// kubeletConditions are the pod conditions a kubelet owns (kubelet's
// kubetypes.PodConditionsByKubelet and the ones it adds by feature): the
// provider reports them; others come from the API server's status.
var kubeletConditions = map[corev1.PodConditionType]bool{
	corev1.PodScheduled:                                true,
	corev1.PodReady:                                    true,
	corev1.PodInitialized:                              true,
	corev1.ContainersReady:                             true,
	corev1.PodReadyToStartContainers:                   true,
	corev1.PodResizePending:                            true,
	corev1.PodResizeInProgress:                         true,
	corev1.PodConditionType("AllContainersRestarting"): true,
}

// mergeStatus is the computed status with the conditions of other
// components (a readiness gate's, DisruptionTarget, ...) kept from the
// API server's status, as kubelet's status manager keeps them: VK writes
// the notified status whole (UpdateStatus), so without this it would erase
// them.
func mergeStatus(api, computed corev1.PodStatus) corev1.PodStatus {
	out := *computed.DeepCopy()
	have := map[corev1.PodConditionType]bool{}
	for _, c := range out.Conditions {
		have[c.Type] = true
	}
	for _, c := range api.Conditions {
		if !kubeletConditions[c.Type] && !have[c.Type] {
			out.Conditions = append(out.Conditions, *c.DeepCopy())
		}
	}
	return out
}

// terminal makes sure a removed pod's final status is what VK's
// PodLifecycleHandler.DeletePod asks for: a terminal phase, every container
// terminated.
func terminal(s corev1.PodStatus) corev1.PodStatus {
	fix := func(list []corev1.ContainerStatus) bool {
		failed := false
		for i := range list {
			cs := &list[i]
			if cs.State.Terminated == nil {
				// As kubelet reports a container it cannot find once the
				// pod is terminal (ContainerStatusUnknown, 137).
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "ContainerStatusUnknown",
					Message: "The container could not be located when the pod was terminated"}}
				cs.Ready, cs.Started = false, new(bool)
			}
			if cs.State.Terminated.ExitCode != 0 {
				failed = true
			}
		}
		return failed
	}
	fix(s.InitContainerStatuses)
	failed := fix(s.ContainerStatuses)
	if s.Phase != corev1.PodSucceeded && s.Phase != corev1.PodFailed {
		s.Phase = corev1.PodSucceeded
		if failed {
			s.Phase = corev1.PodFailed
		}
	}
	return s
}
