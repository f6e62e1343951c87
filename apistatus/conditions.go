package apistatus

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/podsync"
)

func statusOf(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// ContainersReadyCondition is kubelet's GenerateContainersReadyCondition:
// every app container and sidecar ready. old is the previous status (the
// three condition functions take kubelet's arguments).
func ContainersReadyCondition(pod *corev1.Pod, old *corev1.PodStatus, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.ContainersReady, ObservedGeneration: pod.Generation}
	if statuses == nil {
		cond.Status, cond.Reason = corev1.ConditionFalse, UnknownContainerStatuses
		return cond
	}
	var unknown, unready []string
	check := func(c *corev1.Container) {
		if s, ok := statusOf(statuses, c.Name); !ok {
			unknown = append(unknown, c.Name)
		} else if !s.Ready {
			unready = append(unready, c.Name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if podsync.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 || phase == corev1.PodFailed {
		cond.Status, cond.Reason = corev1.ConditionFalse, PodCompleted
		if phase == corev1.PodFailed {
			cond.Reason = PodFailed
		}
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, "containers with unknown status: "+names(unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, "containers with unready status: "+names(unready))
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ContainersNotReady, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = corev1.ConditionTrue
	return cond
}

// ReadyCondition is kubelet's GeneratePodReadyCondition: containers ready
// and every readiness gate's condition True.
func ReadyCondition(pod *corev1.Pod, old *corev1.PodStatus, conditions []corev1.PodCondition, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	cr := ContainersReadyCondition(pod, old, statuses, phase)
	cond := corev1.PodCondition{Type: corev1.PodReady, ObservedGeneration: pod.Generation}
	if cr.Status != corev1.ConditionTrue {
		cond.Status, cond.Reason, cond.Message = cr.Status, cr.Reason, cr.Message
		return cond
	}
	var msgs []string
	for _, rg := range pod.Spec.ReadinessGates {
		c := findCondition(conditions, rg.ConditionType)
		if c == nil {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		} else if c.Status != corev1.ConditionTrue {
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), c.Status))
		}
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ReadinessGatesNotReady, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = corev1.ConditionTrue
	return cond
}

// InitializedCondition is kubelet's GeneratePodInitializedCondition:
// every regular init container done (ready) and every sidecar started, or
// an app container already ran.
func InitializedCondition(pod *corev1.Pod, old *corev1.PodStatus, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.PodInitialized, ObservedGeneration: pod.Generation}
	if statuses == nil && len(pod.Spec.InitContainers) > 0 {
		cond.Status, cond.Reason = corev1.ConditionFalse, UnknownContainerStatuses
		return cond
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s, ok := statusOf(statuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if podsync.IsRestartableInitContainer(c) {
			if s.Started == nil || !*s.Started {
				incomplete = append(incomplete, c.Name)
			}
		} else if !s.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		cond.Status, cond.Reason = corev1.ConditionTrue, PodCompleted
		return cond
	}
	if anyRegularStarted(pod, statuses) {
		cond.Status = corev1.ConditionTrue
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, "containers with unknown status: "+names(unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, "containers with incomplete status: "+names(incomplete))
	}
	if len(msgs) > 0 {
		// RestartAllContainersOnContainerExits (on by default since v1.36):
		// once initialized, a pod stays so while its containers restart.
		if o := findCondition(old.Conditions, corev1.PodInitialized); o != nil && o.Status == corev1.ConditionTrue {
			cond.Status = corev1.ConditionTrue
			return cond
		}
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ContainersNotInitialized, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = corev1.ConditionTrue
	return cond
}

// anyRegularStarted is kubelet's HasAnyRegularContainerStarted.
func anyRegularStarted(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	apps := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		apps[c.Name] = true
	}
	for _, s := range statuses {
		if apps[s.Name] && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}
