package podsync

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/images"
)

// ErrPrepareResources: a pod's dynamic resources (DRA claims) could not
// be prepared, so its sandbox was not made (SyncError matches it).
var ErrPrepareResources = errors.New("FailedPrepareDynamicResources")

// ResourcePreparer prepares a pod's dynamic resources before its sandbox
// is made; *dra.Manager is one.
type ResourcePreparer interface {
	PrepareResources(ctx context.Context, pod *corev1.Pod) error
}

// WithResourcePreparer makes SyncPod prepare the pod's dynamic resources
// right before it creates the pod's sandbox, as kubelet's SyncPod calls
// PrepareDynamicResources (default: none; pods with resource claims must
// then be refused, which criconfig does unless
// criconfig.Node.DynamicResourceAllocation is set). A failure records
// kubelet's FailedPrepareDynamicResources warning event ("Failed to
// prepare dynamic resources: %v") and fails the sync: no sandbox, no
// container, SyncError matching ErrPrepareResources and the preparer's
// error.
func WithResourcePreparer(p ResourcePreparer) Option {
	return func(o *options) { o.preparer = p }
}

// prepareResources runs the preparer before a sandbox is created.
// Kubelet returns from SyncPod with no error recorded (its pod worker then
// waits for the next resync); podstart fails the sync, so that the pod
// worker retries after its error back-off and the reason is seen.
func (s *Syncer) prepareResources(ctx context.Context, pod *corev1.Pod) error {
	if s.o.preparer == nil {
		return nil
	}
	err := s.o.preparer.PrepareResources(ctx, pod)
	if err == nil {
		return nil
	}
	s.o.recorder.Eventf(images.ContainerRef(pod, nil), corev1.EventTypeWarning, "FailedPrepareDynamicResources", "Failed to prepare dynamic resources: %v", err)
	return &prepareError{err: err}
}

// prepareError reads as kubelet's event and matches ErrPrepareResources
// and the preparer's error.
type prepareError struct{ err error }

func (e *prepareError) Error() string   { return "Failed to prepare dynamic resources: " + e.err.Error() }
func (e *prepareError) Unwrap() []error { return []error{ErrPrepareResources, e.err} }
