package nodestatus

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// EventRef is kubelet v1.37.2's reference to the node for the node's
// events (nodeRefWithUID): apiVersion v1, kind Node, the node's name, and
// the Node's UID once known, so that an event's involvedObject.uid names
// the Node (kubectl describe node finds its events by UID). Until a Node
// with a UID has been seen, the reference carries the name only. The
// first UID seen is kept: a Node deleted and created again under the same
// name while the agent runs keeps the old UID in events, as kubelet's.
// An EventRef is safe for concurrent use.
type EventRef struct {
	name string
	ref  atomic.Pointer[corev1.ObjectReference]
}

// NewEventRef makes the reference for the node named nodeName.
func NewEventRef(nodeName string) *EventRef {
	return &EventRef{name: nodeName}
}

// Observe learns the Node's UID from node (one read from the API server),
// the first time node has one for this name.
func (r *EventRef) Observe(node *corev1.Node) {
	if node == nil || node.UID == "" || node.Name != r.name || r.ref.Load() != nil {
		return
	}
	r.ref.CompareAndSwap(nil, &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: r.name, UID: node.UID})
}

// Ref is the reference to give an event recorder. It is shared: do not
// modify it.
func (r *EventRef) Ref() *corev1.ObjectReference {
	if ref := r.ref.Load(); ref != nil {
		return ref
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: r.name}
}

// Setter observes every node the status setters are given (DefaultSetters
// puts it first), so events of a status update carry the UID of the Node
// it updates.
func (r *EventRef) Setter() Setter {
	return func(_ context.Context, node *corev1.Node) error {
		r.Observe(node)
		return nil
	}
}
