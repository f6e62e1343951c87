package csi

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Volume is a CSI volume as kubelet's plugin sees it: from a
// PersistentVolume's csi source (VolumeFromPV) or a pod's inline csi
// volume (VolumeFromInline).
type Volume struct {
	Driver string
	// VolumeHandle: the PV's; for an inline volume kubelet's
	// EphemeralVolumeHandle(pod UID, volume name).
	VolumeHandle string
	// SpecName: the PV's name, or the pod's volume name for an inline volume.
	SpecName string
	// Ephemeral: a CSI inline volume (lifecycle mode Ephemeral): published
	// only, never staged.
	Ephemeral bool
	// Block: volumeMode Block (published as a device, fsType "block").
	Block        bool
	FSType       string
	ReadOnly     bool
	AccessModes  []corev1.PersistentVolumeAccessMode // the PV's; the first is used, ReadWriteOnce if none
	MountOptions []string                            // the PV's mountOptions
	// VolumeAttributes: the source's volumeAttributes (volume context).
	VolumeAttributes map[string]string
	// Secret references the caller resolves into the requests' Secrets.
	NodeStageSecretRef, NodePublishSecretRef, NodeExpandSecretRef *corev1.SecretReference
}

// VolumeFromPV reads a PersistentVolume's csi source. readOnly is the
// pod's claim reference readOnly (kubelet's spec.ReadOnly).
func VolumeFromPV(pv *corev1.PersistentVolume, readOnly bool) (Volume, error) {
	if pv == nil || pv.Spec.CSI == nil {
		return Volume{}, fmt.Errorf("%w: CSIPersistentVolumeSource not defined in spec", ErrInvalidRequest)
	}
	src := pv.Spec.CSI
	v := Volume{
		Driver:               src.Driver,
		VolumeHandle:         src.VolumeHandle,
		SpecName:             pv.Name,
		Block:                pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
		FSType:               src.FSType,
		ReadOnly:             readOnly,
		AccessModes:          pv.Spec.AccessModes,
		MountOptions:         pv.Spec.MountOptions,
		VolumeAttributes:     src.VolumeAttributes,
		NodeStageSecretRef:   src.NodeStageSecretRef,
		NodePublishSecretRef: src.NodePublishSecretRef,
		NodeExpandSecretRef:  src.NodeExpandSecretRef,
	}
	return v, v.validate()
}

// VolumeFromInline reads a pod's inline csi volume (lifecycle mode
// Ephemeral); its nodePublishSecretRef names a Secret in the pod's
// namespace.
func VolumeFromInline(pod *corev1.Pod, vol *corev1.Volume) (Volume, error) {
	if pod == nil || vol == nil || vol.CSI == nil {
		return Volume{}, fmt.Errorf("%w: volume source not found in volume.Spec", ErrInvalidRequest)
	}
	src := vol.CSI
	if err := ValidatePodUID(string(pod.UID)); err != nil {
		return Volume{}, err
	}
	v := Volume{
		Driver:           src.Driver,
		VolumeHandle:     EphemeralVolumeHandle(string(pod.UID), vol.Name),
		SpecName:         vol.Name,
		Ephemeral:        true,
		VolumeAttributes: src.VolumeAttributes,
		AccessModes:      nil,
	}
	if src.FSType != nil {
		v.FSType = *src.FSType
	}
	if src.ReadOnly != nil {
		v.ReadOnly = *src.ReadOnly
	}
	if src.NodePublishSecretRef != nil {
		v.NodePublishSecretRef = &corev1.SecretReference{Name: src.NodePublishSecretRef.Name, Namespace: pod.Namespace}
	}
	return v, v.validate()
}

func (v Volume) validate() error {
	if err := ValidateDriverName(v.Driver); err != nil {
		return err
	}
	if err := ValidateVolumeHandle(v.VolumeHandle); err != nil {
		return err
	}
	if err := ValidateSpecName(v.SpecName); err != nil {
		return err
	}
	if v.Ephemeral && v.Block {
		return fmt.Errorf("%w: inline CSI volume %s cannot be a block volume", ErrInvalidRequest, v.SpecName)
	}
	return nil
}

// accessMode is the first of the PV's access modes, ReadWriteOnce if none.
func (v Volume) accessMode() corev1.PersistentVolumeAccessMode {
	if len(v.AccessModes) > 0 {
		return v.AccessModes[0]
	}
	return corev1.ReadWriteOnce
}

// Secrets are the data of a secret the driver needs (nodeStageSecretRef,
// nodePublishSecretRef, nodeExpandSecretRef), keyed as the Secret's data.
// Printed with any verb, it shows its keys only.
type Secrets map[string]string

// String shows the keys only.
func (s Secrets) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "Secrets{" + strings.Join(keys, ",") + ": [redacted]}"
}

// GoString shows the keys only.
func (s Secrets) GoString() string { return s.String() }

// SecretsFromData converts a Secret's data as kubelet's
// getCredentialsFromSecret.
func SecretsFromData(data map[string][]byte) Secrets {
	s := Secrets{}
	for k, v := range data {
		s[k] = string(v)
	}
	return s
}

func (s Secrets) orEmpty() map[string]string {
	if s == nil {
		return map[string]string{}
	}
	return s
}
