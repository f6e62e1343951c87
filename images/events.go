package images

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// EventRecorder has the method set podstart needs of client-go's
// record.EventRecorder, so an operator passes its recorder as it is.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Event reasons kubelet uses for images.
const (
	EventPulling           = "Pulling"
	EventPulled            = "Pulled"
	EventFailed            = "Failed"
	EventBackOff           = "BackOff"
	EventInspectFailed     = "InspectFailed"
	EventErrImageNeverPull = "ErrImageNeverPull"
)

// ContainerRef is the object reference kubelet attaches a container's
// events to: the pod, with the field path of the container.
func ContainerRef(pod *corev1.Pod, c *corev1.Container) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}
	if c == nil {
		return ref
	}
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", c.Name)
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", c.Name)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == c.Name {
			ref.FieldPath = fmt.Sprintf("spec.ephemeralContainers{%s}", c.Name)
		}
	}
	return ref
}

type discard struct{}

func (discard) Eventf(apiruntime.Object, string, string, string, ...interface{}) {}
