package statusmanager

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// Reasons of the Ready and ContainersReady conditions of a terminal pod
// (kubelet's status.PodCompleted and status.PodFailed).
const (
	reasonPodCompleted = "PodCompleted"
	reasonPodFailed    = "PodFailed"
)

// byKubelet is kubelet's PodConditionByKubelet with v1.37's default gates
// (PodReadyToStartContainersCondition, GA, and RestartAllContainersOnContainerExits
// on): the conditions kubelet owns and overwrites.
func byKubelet(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady,
		corev1.PodResizeInProgress, corev1.PodResizePending,
		corev1.PodReadyToStartContainers, corev1.AllContainersRestarting:
		return true
	}
	return false
}

// sharedByKubelet is kubelet's PodConditionSharedByKubelet: conditions
// kubelet may set but others may too.
func sharedByKubelet(t corev1.PodConditionType) bool { return t == corev1.DisruptionTarget }

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

func findCondition(list []corev1.PodCondition, t corev1.PodConditionType) (int, *corev1.PodCondition) {
	for i := range list {
		if list[i].Type == t {
			return i, &list[i]
		}
	}
	return -1, nil
}

func conditionTrue(s corev1.PodStatus, t corev1.PodConditionType) bool {
	_, c := findCondition(s.Conditions, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// equalByKubelet is kubelet's isPodStatusByKubeletEqual: the statuses are
// equal in every field kubelet owns. Conditions of others, resource claim
// statuses and extended resource claim statuses are not compared; of
// kubelet's conditions only status, reason and message are (not times).
// Both statuses must be normalised.
func equalByKubelet(old, status *corev1.PodStatus) bool {
	pick := func(list []corev1.PodCondition) map[corev1.PodConditionType]corev1.PodCondition {
		m := make(map[corev1.PodConditionType]corev1.PodCondition, len(list))
		for _, c := range list {
			if byKubelet(c.Type) || sharedByKubelet(c.Type) {
				m[c.Type] = c
			}
		}
		return m
	}
	oldC, newC := pick(old.Conditions), pick(status.Conditions)
	if len(oldC) != len(newC) {
		return false
	}
	for t, n := range newC {
		o, ok := oldC[t]
		if !ok || o.Status != n.Status || o.Message != n.Message || o.Reason != n.Reason {
			return false
		}
	}
	cp := old.DeepCopy()
	cp.Conditions = status.Conditions
	cp.ResourceClaimStatuses = status.ResourceClaimStatuses
	cp.ExtendedResourceClaimStatus = status.ExtendedResourceClaimStatus
	cp.NodeAllocatableResourceClaimStatuses = status.NodeAllocatableResourceClaimStatuses
	return equality.Semantic.DeepEqual(cp, status)
}

// merge is kubelet's mergePodStatus: the status to send, from the one the
// API server holds (old) and the manager's (new). Conditions kubelet does
// not own are kept from old; DisruptionTarget is sent only with the
// transition to a terminal phase once no container can run; a terminal
// phase is held back (old phase, reason and message kept) while containers
// could still run; a terminal pod is never reported ready. old is not
// changed.
func merge(pod *corev1.Pod, old, status corev1.PodStatus, couldHaveRunningContainers bool, now time.Time) corev1.PodStatus {
	status = *status.DeepCopy()
	conds := make([]corev1.PodCondition, 0, len(old.Conditions)+len(status.Conditions))
	for _, c := range old.Conditions {
		if !byKubelet(c.Type) {
			conds = append(conds, c)
		}
	}
	toTerminal := !terminal(old.Phase) && terminal(status.Phase)
	for _, c := range status.Conditions {
		switch {
		case byKubelet(c.Type):
			conds = append(conds, c)
		case c.Type == corev1.DisruptionTarget && toTerminal && !couldHaveRunningContainers:
			// Its transition time is stamped again: sending it was held
			// back until every container stopped.
			if _, oc := findCondition(old.Conditions, c.Type); oc == nil || oc.Status != c.Status {
				c.LastTransitionTime = metav1.NewTime(now)
			} else {
				c.LastTransitionTime = oc.LastTransitionTime
			}
			if i, _ := findCondition(conds, c.Type); i >= 0 {
				conds[i] = c
			} else {
				conds = append(conds, c)
			}
		}
	}
	status.Conditions = conds
	// Not owned and not changed by kubelet.
	status.ResourceClaimStatuses = old.ResourceClaimStatuses
	status.ExtendedResourceClaimStatus = old.ExtendedResourceClaimStatus
	status.NodeAllocatableResourceClaimStatuses = old.NodeAllocatableResourceClaimStatuses

	if toTerminal && couldHaveRunningContainers {
		status.Phase, status.Reason, status.Message = old.Phase, old.Reason, old.Message
	}
	if terminal(status.Phase) && (conditionTrue(status, corev1.PodReady) || conditionTrue(status, corev1.ContainersReady)) {
		reason := reasonPodFailed
		if status.Phase == corev1.PodSucceeded {
			reason = reasonPodCompleted
		}
		for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
			setCondition(&status, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, ObservedGeneration: pod.Generation}, now)
		}
	}
	return status
}

// setCondition is kubelet's podutil.UpdatePodCondition: replace or append,
// keeping the transition time while the status does not change.
func setCondition(status *corev1.PodStatus, c corev1.PodCondition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now)
	i, old := findCondition(status.Conditions, c.Type)
	if old == nil {
		status.Conditions = append(status.Conditions, c)
		return
	}
	if c.Status == old.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	status.Conditions[i] = c
}

// canBeDeleted is kubelet's canBeDeleted: the pod object may be removed
// from the API server once it is being deleted, its phase there is
// terminal and the pod worker finished with it (podworker's Removed:
// killed, its resources reclaimed); never a mirror pod.
func canBeDeleted(pod *corev1.Pod, finished bool) bool {
	if pod == nil || pod.DeletionTimestamp == nil {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false // a mirror pod goes with its static pod (staticpods.Mirrors)
	}
	return terminal(pod.Status.Phase) && finished
}

// couldHaveRunningContainers stands for kubelet's pod workers'
// CouldHaveRunningContainers: false once the worker removed the pod, or
// when the runtime's view of its last sync shows no container running (or
// in an unknown state); true before the first sync.
func couldHaveRunningContainers(st podworker.PodState) bool {
	if st.Removed {
		return false
	}
	if st.Status == nil {
		return true
	}
	for _, c := range st.Status.ContainerStatuses {
		if c.State == podsync.ContainerStateRunning || c.State == podsync.ContainerStateUnknown {
			return true
		}
	}
	return false
}
