package podsync

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/criconfig"
)

// Kubelet's labels and annotations on sandboxes and containers, as
// criconfig writes them: crictl and kubelet-aware tools see podstart's
// pods as kubelet's, and Status rebuilds a pod's state from the runtime
// alone.
const (
	LabelPodName                        = criconfig.LabelPodName
	LabelPodNamespace                   = criconfig.LabelPodNamespace
	LabelPodUID                         = criconfig.LabelPodUID
	LabelContainerName                  = criconfig.LabelContainerName
	AnnotationContainerHash             = criconfig.AnnotationContainerHash
	AnnotationContainerRestartCount     = criconfig.AnnotationContainerRestartCount
	AnnotationTerminationMessagePath    = criconfig.AnnotationTerminationMessagePath
	AnnotationTerminationMessagePolicy  = criconfig.AnnotationTerminationMessagePolicy
	AnnotationPodDeletionGracePeriod    = criconfig.AnnotationPodDeletionGracePeriod
	AnnotationPodTerminationGracePeriod = criconfig.AnnotationPodTerminationGracePeriod
	AnnotationContainerPreStopHandler   = criconfig.AnnotationContainerPreStopHandler
	AnnotationContainerPorts            = criconfig.AnnotationContainerPorts
)

// HashContainer is kubelet's container hash (criconfig.HashContainer).
func HashContainer(c *corev1.Container) uint64 { return criconfig.HashContainer(c) }
