//go:build podstart_api036

package validation

import corev1 "k8s.io/api/core/v1"

// The v0.36 types lack the fields fields.go reads: each is absent.

func emptyDirMode(*corev1.EmptyDirVolumeSource) *int32            { return nil }
func secretDefaultUser(*corev1.SecretVolumeSource) *int64         { return nil }
func configMapDefaultUser(*corev1.ConfigMapVolumeSource) *int64   { return nil }
func downwardDefaultUser(*corev1.DownwardAPIVolumeSource) *int64  { return nil }
func projectedDefaultUser(*corev1.ProjectedVolumeSource) *int64   { return nil }
func keyToPathUser(*corev1.KeyToPath) *int64                      { return nil }
func downwardFileUser(*corev1.DownwardAPIVolumeFile) *int64       { return nil }
func tokenUser(*corev1.ServiceAccountTokenProjection) *int64      { return nil }
func trustBundleUser(*corev1.ClusterTrustBundleProjection) *int64 { return nil }
func podCertificateUser(*corev1.PodCertificateProjection) *int64  { return nil }
func mountBindOptions(*corev1.VolumeMount) []string               { return nil }
func grpcMode(*corev1.GRPCAction) *string                         { return nil }
func httpGetProtocol(*corev1.HTTPGetAction) *string               { return nil }
