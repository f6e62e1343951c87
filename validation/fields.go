package validation

import corev1 "k8s.io/api/core/v1"

// The fields of k8s.io/api v0.37 whose feature gates are alpha and off in
// v1.37 (the API server drops them from a new pod), read only through these
// accessors, so that the list of what dropped.go refuses is in one place.

func emptyDirMode(e *corev1.EmptyDirVolumeSource) *int32            { return e.Mode }
func secretDefaultUser(s *corev1.SecretVolumeSource) *int64         { return s.DefaultUser }
func configMapDefaultUser(c *corev1.ConfigMapVolumeSource) *int64   { return c.DefaultUser }
func downwardDefaultUser(d *corev1.DownwardAPIVolumeSource) *int64  { return d.DefaultUser }
func projectedDefaultUser(p *corev1.ProjectedVolumeSource) *int64   { return p.DefaultUser }
func keyToPathUser(k *corev1.KeyToPath) *int64                      { return k.User }
func downwardFileUser(f *corev1.DownwardAPIVolumeFile) *int64       { return f.User }
func tokenUser(t *corev1.ServiceAccountTokenProjection) *int64      { return t.User }
func trustBundleUser(b *corev1.ClusterTrustBundleProjection) *int64 { return b.User }
func podCertificateUser(c *corev1.PodCertificateProjection) *int64  { return c.User }
func mountBindOptions(m *corev1.VolumeMount) []string               { return m.BindMountOptions }

func grpcMode(g *corev1.GRPCAction) *string {
	if g.Mode == nil {
		return nil
	}
	m := string(*g.Mode)
	return &m
}

func httpGetProtocol(h *corev1.HTTPGetAction) *string {
	if h.Protocol == nil {
		return nil
	}
	p := string(*h.Protocol)
	return &p
}
