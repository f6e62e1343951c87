package apiobjects

import (
	"context"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/mounts"
)

// PodCertificatePayload is kubelet's projected volume plugin for the
// podCertificate source src, at sources[sourceIndex] of the pod's
// projected volume volumeName (which names it to the manager): the
// manager's key and chain (CredentialBundle) written at the source's paths, each only when set: credentialBundlePath
// the key's PEM block followed by the chain's, keyPath the key,
// certificateChainPath the chain. Every file has mode, owned by fsUser
// (ProjectedPayload passes 0600 when the pod has an fsUser or fsGroup,
// its defaultMode otherwise). A nil manager fails with
// ErrNoPodCertificateClient; before issuance the volume fails with
// ErrPodCertificatePending.
func PodCertificatePayload(ctx context.Context, m *PodCertificates, pod *corev1.Pod, volumeName string, sourceIndex int, src *corev1.PodCertificateProjection, mode fs.FileMode, fsUser *int64) (map[string]mounts.File, error) {
	if m == nil {
		return nil, fmt.Errorf("podCertificate source (signer %q): %w", src.SignerName, ErrNoPodCertificateClient)
	}
	key, chain, err := m.credentialBundle(ctx, pod, volumeName, sourceIndex, src)
	if err != nil {
		return nil, err
	}
	out := make(map[string]mounts.File, 3)
	if src.CredentialBundlePath != "" {
		bundle := make([]byte, 0, len(key)+len(chain))
		bundle = append(append(bundle, key...), chain...)
		out[src.CredentialBundlePath] = mounts.File{Data: bundle, Mode: mode, FsUser: fsUser}
	}
	if src.KeyPath != "" {
		out[src.KeyPath] = mounts.File{Data: key, Mode: mode, FsUser: fsUser}
	}
	if src.CertificateChainPath != "" {
		out[src.CertificateChainPath] = mounts.File{Data: chain, Mode: mode, FsUser: fsUser}
	}
	return out, nil
}
