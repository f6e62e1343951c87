package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/validation"
)

// pvcProtectionFinalizer is kubernetes.io/pvc-protection: a claim being
// deleted but held by it is still usable, as kubelet's getPVCExtractPV
// says.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// spec is what the manager learns of one pod volume it serves: the CSI
// volume behind a PVC (through its PV) or an inline CSI volume.
type spec struct {
	name     corev1.UniqueVolumeName
	specName string // the PV's name, or the pod's volume name (inline)
	driver   string
	handle   string
	inline   *corev1.CSIVolumeSource
	pv       *corev1.PersistentVolume
	readOnly bool // the claim source's readOnly (PV) or the inline volume's
	// claimCapacity is the claim's status.capacity storage when resolved.
	claimCapacity resource.Quantity
	attachable    bool
	block         bool // used in volumeDevices, volumeMode Block
}

// Manages says whether v is a volume the manager serves: a
// persistentVolumeClaim, an ephemeral or a csi volume. Other types are for
// the in-tree providers (apiobjects, podsync.DefaultVolumes).
func Manages(v corev1.Volume) bool {
	return v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil
}

// usedVolumes is kubelet's GetPodVolumeNames: the volumes that some
// container (init, app, ephemeral) mounts, and those it uses as devices.
func usedVolumes(pod *corev1.Pod) (mounts, devices map[string]bool) {
	mounts, devices = map[string]bool{}, map[string]bool{}
	add := func(vm []corev1.VolumeMount, vd []corev1.VolumeDevice) {
		for _, m := range vm {
			mounts[m.Name] = true
		}
		for _, d := range vd {
			devices[d.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	return mounts, devices
}

// resolve is kubelet's populator createVolumeSpec for one volume the
// manager serves, with its messages.
func (m *Manager) resolve(ctx context.Context, pod *corev1.Pod, v corev1.Volume, mounts, devices map[string]bool) (*spec, error) {
	if v.CSI != nil {
		if devices[v.Name] {
			// An inline volume's mode is Filesystem (kubelet's check).
			return nil, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", v.Name, corev1.PersistentVolumeFilesystem)
		}
		return m.resolveInline(ctx, pod, v)
	}
	claimName, readOnly, ephemeral := "", false, false
	switch {
	case v.PersistentVolumeClaim != nil:
		claimName, readOnly = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly
	case v.Ephemeral != nil:
		// ephemeral.VolumeClaimName.
		claimName, ephemeral = pod.Name+"-"+v.Name, true
	}
	pvc, err := m.claim(ctx, pod.Namespace, claimName)
	if err != nil {
		return nil, fmt.Errorf("error processing PVC %s/%s: %v", pod.Namespace, claimName, err)
	}
	if ephemeral && (pvc.Namespace != pod.Namespace || !metav1.IsControlledBy(pvc, pod)) {
		// ephemeral.VolumeIsForPod.
		return nil, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pvc.Namespace, pvc.Name, pod.Namespace, pod.Name)
	}
	pv, err := m.persistentVolume(ctx, pvc)
	if err != nil {
		return nil, fmt.Errorf("error processing PVC %s/%s: %v", pod.Namespace, claimName, err)
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Errorf("volume %q: PV %s is not a CSI volume: %w (only CSI persistent volumes are)", v.Name, pv.Name, ErrUnsupported)
	}
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	// kubelet's checks of the volume's mode against its use.
	if mounts[v.Name] && mode != corev1.PersistentVolumeFilesystem {
		return nil, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", v.Name, mode)
	}
	if devices[v.Name] && mode != corev1.PersistentVolumeBlock {
		return nil, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", v.Name, mode)
	}
	if !validation.IsDNSSubdomain(pv.Name) {
		return nil, fmt.Errorf("PV name %q: %w", pv.Name, ErrInvalidName)
	}
	src := pv.Spec.CSI
	if err := CheckDriverName(src.Driver); err != nil {
		return nil, err
	}
	if src.VolumeHandle == "" {
		return nil, fmt.Errorf("PV %s has an empty csi.volumeHandle", pv.Name)
	}
	drv, err := m.csiDriver(ctx, src.Driver)
	if err != nil {
		return nil, err
	}
	if err := m.checkDriver(pod, drv, src.Driver); err != nil {
		return nil, fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return &spec{
		name:     UniqueVolumeName(src.Driver, src.VolumeHandle),
		specName: pv.Name, driver: src.Driver, handle: src.VolumeHandle,
		pv: pv, readOnly: readOnly, claimCapacity: pvc.Status.Capacity.Storage().DeepCopy(),
		// csiPlugin.CanAttach: attach unless the CSIDriver exists and
		// says attachRequired: false.
		attachable: drv == nil || drv.Spec.AttachRequired == nil || *drv.Spec.AttachRequired,
		block:      mode == corev1.PersistentVolumeBlock,
	}, nil
}

// resolveInline resolves a CSI inline volume; its lifecycle mode is
// checked when it is published (lifecycleModeError), as kubelet's.
func (m *Manager) resolveInline(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (*spec, error) {
	src := v.CSI
	if err := CheckDriverName(src.Driver); err != nil {
		return nil, err
	}
	drv, err := m.csiDriver(ctx, src.Driver)
	if err != nil {
		return nil, err
	}
	if err := m.checkDriver(pod, drv, src.Driver); err != nil {
		return nil, fmt.Errorf("volume %q: %w", v.Name, err)
	}
	return &spec{
		name:     InlineVolumeName(pod.UID, v.Name),
		specName: v.Name, driver: src.Driver, handle: InlineVolumeHandle(pod.UID, v.Name),
		inline: src, readOnly: src.ReadOnly != nil && *src.ReadOnly,
	}, nil
}

// checkDriver refuses, by name, the CSIDriver settings the manager does
// not honour yet.
func (m *Manager) checkDriver(pod *corev1.Pod, drv *storagev1.CSIDriver, name string) error {
	if drv == nil {
		return nil
	}
	if len(drv.Spec.TokenRequests) > 0 {
		return fmt.Errorf("CSIDriver %s: tokenRequests: %w", name, ErrUnsupported)
	}
	if drv.Spec.RequiresRepublish != nil && *drv.Spec.RequiresRepublish {
		return fmt.Errorf("CSIDriver %s: requiresRepublish: %w", name, ErrUnsupported)
	}
	if drv.Spec.NodeAllocatableUpdatePeriodSeconds != nil && *drv.Spec.NodeAllocatableUpdatePeriodSeconds > 0 {
		// kubelet (MutableCSINodeAllocatableCount, GA in v1.37) would
		// refresh the CSINode's allocatable count on this period and
		// reject a pod whose attachment failed with ResourceExhausted.
		return fmt.Errorf("CSIDriver %s: nodeAllocatableUpdatePeriodSeconds: %w", name, ErrUnsupported)
	}
	if drv.Spec.SELinuxMount != nil && *drv.Spec.SELinuxMount && podHasSELinuxOptions(pod) {
		return fmt.Errorf("CSIDriver %s: seLinuxMount with a pod that sets seLinuxOptions: %w", name, ErrUnsupported)
	}
	return nil
}

func podHasSELinuxOptions(pod *corev1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SELinuxOptions != nil {
		return true
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if c.SecurityContext != nil && c.SecurityContext.SELinuxOptions != nil {
			return true
		}
	}
	return false
}

// claim is kubelet's getPVCExtractPV.
func (m *Manager) claim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := m.api.GetPersistentVolumeClaim(ctx, namespace, name)
	if err != nil || pvc == nil {
		return nil, fmt.Errorf("failed to fetch PVC from API server: %v", err)
	}
	if pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer) {
		return nil, errors.New("PVC is being deleted")
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		// A Lost claim is not bound either: kubelet says the same.
		return nil, errors.New("PVC is not bound")
	}
	if pvc.Spec.VolumeName == "" {
		return nil, errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	return pvc, nil
}

// persistentVolume is kubelet's getPVSpec: the PV must be bound to this
// very claim.
func (m *Manager) persistentVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	name := pvc.Spec.VolumeName
	pv, err := m.api.GetPersistentVolume(ctx, name)
	if err != nil || pv == nil {
		return nil, fmt.Errorf("failed to fetch PV %s from API server: %v", name, err)
	}
	if pv.Spec.ClaimRef == nil {
		return nil, fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", name)
	}
	if pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	return pv, nil
}

// csiDriver returns the driver's CSIDriver, nil when there is none.
func (m *Manager) csiDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	d, err := m.api.GetCSIDriver(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("CSIDriver %s: %w", name, err)
	}
	return d, nil
}

// lifecycleModeError is kubelet's supportsVolumeLifecycleMode: an inline
// volume needs a CSIDriver listing Ephemeral; a persistent one a CSIDriver
// listing Persistent, or none. An empty list is the API server's default,
// Persistent.
func lifecycleModeError(drv *storagev1.CSIDriver, driver string, inline bool) error {
	mode := storagev1.VolumeLifecyclePersistent
	if inline {
		mode = storagev1.VolumeLifecycleEphemeral
	}
	if drv == nil {
		if !inline {
			return nil
		}
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, driver)
	}
	modes := drv.Spec.VolumeLifecycleModes
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if slices.Contains(modes, mode) {
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, driver, modes)
}
