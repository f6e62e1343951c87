package podworker

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodVolumes is what the Workers need of a volume manager for the volumes
// that need a storage system (PVCs, generic ephemeral and CSI inline
// volumes); volumemanager.Manager is one. Its volumes reach the
// containers through the Syncer's VolumeProvider (volumemanager.Provider).
type PodVolumes interface {
	// AddPod puts the pod's volumes in the desired state.
	AddPod(ctx context.Context, pod *corev1.Pod) error
	// RemovePod takes them out once the pod is killed.
	RemovePod(uid types.UID)
	// WaitForAttachAndMount waits until every volume of the pod is
	// attached and mounted, or fails with kubelet's message.
	WaitForAttachAndMount(ctx context.Context, pod *corev1.Pod) error
	// WaitForUnmount waits until none of them is mounted any more.
	WaitForUnmount(ctx context.Context, pod *corev1.Pod) error
}

// WithVolumeManager makes every sync of a pod that may start containers
// wait for its volumes first (kubelet's syncPod calls the volume
// manager's WaitForAttachAndMount before SyncPod; a failure fails the
// sync, retried after the error retry, with the manager's FailedMount
// event), and a killed pod wait for its volumes to be unmounted before
// its cgroup and directories are removed (kubelet's SyncTerminatedPod
// waits with WaitForUnmount). Without it, only the Syncer's
// VolumeProvider is asked for volumes.
func WithVolumeManager(v PodVolumes) Option { return func(o *options) { o.volumes = v } }

// mountVolumes is kubelet's: the pod into the desired state (its
// populator), then the wait.
func (w *Workers) mountVolumes(ctx context.Context, pod *corev1.Pod) error {
	if w.o.volumes == nil {
		return nil
	}
	if err := w.o.volumes.AddPod(ctx, pod); err != nil {
		return err
	}
	return w.o.volumes.WaitForAttachAndMount(ctx, pod)
}

// unmountVolumes takes a killed pod out of the desired state and waits
// until its volumes are unmounted.
func (w *Workers) unmountVolumes(ctx context.Context, pod *corev1.Pod) error {
	if w.o.volumes == nil {
		return nil
	}
	w.o.volumes.RemovePod(pod.UID)
	return w.o.volumes.WaitForUnmount(ctx, pod)
}

// hasClaimVolume reports whether the pod has a volume through a
// PersistentVolumeClaim (its own or a generic ephemeral volume's).
func hasClaimVolume(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}
