package eviction

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/podstart/podstart/criconfig"
)

// Reason is the status reason of an evicted pod, the reason of the events
// and of an admission refused under pressure.
const Reason = "Evicted"

// The keys of the annotations kubelet puts on an eviction's event.
const (
	OffendingContainersKey      = "offending_containers"
	OffendingContainersUsageKey = "offending_containers_usage"
	OffendingPodKey             = "offending_pod"
	OffendingPodUsageKey        = "offending_pod_usage"
	StarvedResourceKey          = "starved_resource"
)

// Message is kubelet's evictionMessage for evicting pod to reclaim res:
// "The node was low on resource: memory. ", the threshold's value and the
// signal's available amount (from the first threshold measuring res that
// has an observation), then — when the pod has stats — the pod's working
// set against its pod-level memory request when it sets one, and each
// container (app, then init, as listed in the stats) whose usage of res
// exceeds its request. The annotations name those containers and their
// usage, and the starved resource; they are empty when the pod has no
// stats, as kubelet's.
func Message(res corev1.ResourceName, pod *corev1.Pod, stats PodStatsFunc, thresholds []Threshold, obs Observations) (string, map[string]string) {
	ann := map[string]string{}
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %v. ", res)
	if q, avail := thresholdMetInfo(res, thresholds, obs); q != nil && avail != nil {
		fmt.Fprintf(&b, "Threshold quantity: %v, available: %v. ", q, avail)
	}
	s, ok := stats(pod)
	if !ok {
		return b.String(), ann
	}
	if res == corev1.ResourceMemory && resourcehelper.IsPodLevelResourcesSet(pod) {
		if req, ok := pod.Spec.Resources.Requests[res]; ok && s.Memory != nil {
			use := workingSet(s.Memory)
			fmt.Fprintf(&b, "Pod %s was using %s, request is %s, has larger consumption of %v. ", pod.Name, use.String(), req.String(), res)
			ann[OffendingPodKey] = pod.Name
			ann[OffendingPodUsageKey] = use.String()
		}
	}
	var names, usages []string
	for _, cs := range s.Containers {
		c := findContainer(pod, cs.Name)
		if c == nil {
			continue
		}
		req := c.Resources.Requests[res]
		var use *resource.Quantity
		switch res {
		case corev1.ResourceEphemeralStorage:
			if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
				use = resource.NewQuantity(int64(*cs.Rootfs.UsedBytes+*cs.Logs.UsedBytes), resource.BinarySI)
			}
		case corev1.ResourceMemory:
			if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
				use = resource.NewQuantity(int64(*cs.Memory.WorkingSetBytes), resource.BinarySI)
			}
		}
		if use != nil && use.Cmp(req) > 0 {
			fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %v. ", c.Name, use.String(), req.String(), res)
			names = append(names, c.Name)
			usages = append(usages, use.String())
		}
	}
	ann[OffendingContainersKey] = strings.Join(names, ",")
	ann[OffendingContainersUsageKey] = strings.Join(usages, ",")
	ann[StarvedResourceKey] = string(res)
	return b.String(), ann
}

// findContainer finds an app or init container by name (ephemeral
// containers have no resources and are never blamed).
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// The messages of evictions for exceeding local storage limits.
func containerEphemeralStorageMessage(container string, limit resource.Quantity) string {
	return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", container, limit.String())
}

func podEphemeralStorageMessage(limit resource.Quantity) string {
	return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String())
}

func emptyDirMessage(volume string, limit resource.Quantity) string {
	return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", volume, limit.String())
}

// EvictedStatus writes what kubelet writes into an evicted pod's status:
// phase Failed, reason Evicted, the message, and — for evictions under
// node pressure, not for exceeding a local storage limit — the condition
// DisruptionTarget=True with reason TerminationByKubelet, the same message
// and the pod's generation as its observedGeneration. An existing
// DisruptionTarget condition is replaced; its transition time is kept when
// its status was already True, else set to now.
func EvictedStatus(status *corev1.PodStatus, pod *corev1.Pod, message string, condition bool, now metav1.Time) {
	status.Phase = corev1.PodFailed
	status.Reason = Reason
	status.Message = message
	if !condition {
		return
	}
	c := corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		ObservedGeneration: pod.Generation,
		Status:             corev1.ConditionTrue,
		Reason:             corev1.PodReasonTerminationByKubelet,
		Message:            message,
		LastTransitionTime: now,
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// IsEvicted is kubelet's PodIsEvicted: phase Failed with reason Evicted.
func IsEvicted(status corev1.PodStatus) bool {
	return status.Phase == corev1.PodFailed && status.Reason == Reason
}

// ErrNodePressure is matched (errors.Is) by the error Admit returns for a
// pod refused under node pressure.
var ErrNodePressure = errors.New("node is under resource pressure")

// AdmitError is a pod refused under node pressure; Reason and Message are
// what kubelet writes into the refused pod's status.
type AdmitError struct {
	Conditions []corev1.NodeConditionType
}

// Reason is kubelet's: Evicted.
func (e *AdmitError) Reason() string { return Reason }

// Message is kubelet's: "The node had condition: [DiskPressure]. ".
func (e *AdmitError) Message() string {
	return fmt.Sprintf("The node had condition: %v. ", e.Conditions)
}

func (e *AdmitError) Error() string { return e.Message() }

// Unwrap makes the error match ErrNodePressure.
func (e *AdmitError) Unwrap() error { return ErrNodePressure }

// Annotations kubelet reads to tell static and mirror pods.
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configMirrorAnnotation = "kubernetes.io/config.mirror"
	// SystemCriticalPriority is the priority from which a pod is critical.
	SystemCriticalPriority = 2 * 1000000000
)

// IsCritical is kubelet's IsCriticalPod: a static pod (a config source
// other than the API server), a mirror pod, or a priority of at least
// SystemCriticalPriority. Critical pods are admitted under pressure and
// never evicted for it.
func IsCritical(pod *corev1.Pod) bool {
	if src, ok := pod.Annotations[configSourceAnnotation]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[configMirrorAnnotation]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// Admit is kubelet's eviction admit handler as a pure function of the
// node's pressure conditions: with none, every pod is admitted; critical
// pods are always admitted; under MemoryPressure alone, pods that are not
// BestEffort are admitted, and BestEffort pods only when they tolerate the
// node.kubernetes.io/memory-pressure:NoSchedule taint; under DiskPressure
// or PIDPressure every other pod is refused with an *AdmitError. Taint
// comparison operators (an alpha gate, off in v1.37) are not honoured.
func Admit(pod *corev1.Pod, conditions []corev1.NodeConditionType) error {
	if len(conditions) == 0 || IsCritical(pod) {
		return nil
	}
	if len(conditions) == 1 && conditions[0] == corev1.NodeMemoryPressure {
		if criconfig.QOSClass(pod) != corev1.PodQOSBestEffort {
			return nil
		}
		taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
				return nil
			}
		}
	}
	return &AdmitError{Conditions: append([]corev1.NodeConditionType(nil), conditions...)}
}
