package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// droppedFields refuses the fields the v1.37 API server removes from a new
// pod because their feature gate is off by default (dropDisabledPodFields):
// kubelet never sees them set. podstart does not honour them either, and
// running the pod without them would be a silent drop (a Secret file owned
// by root instead of the user asked for, a container stopped with another
// signal), so each is refused by name instead.
func droppedFields(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	gate := func(p *field.Path, name string) {
		errs = append(errs, field.Forbidden(p, "the API server drops this field (feature gate "+name+" is off by default in v1.37) and podstart does not honour it"))
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		p := fld.Child("volumes").Index(i)
		users := func(p *field.Path, def *int64, items []corev1.KeyToPath) {
			if def != nil {
				gate(p.Child("defaultUser"), "AtomicWriteVolumeUserFields")
			}
			for j := range items {
				if keyToPathUser(&items[j]) != nil {
					gate(p.Child("items").Index(j).Child("user"), "AtomicWriteVolumeUserFields")
				}
			}
		}
		downward := func(p *field.Path, items []corev1.DownwardAPIVolumeFile) {
			for j := range items {
				if downwardFileUser(&items[j]) != nil {
					gate(p.Child("items").Index(j).Child("user"), "AtomicWriteVolumeUserFields")
				}
			}
		}
		switch {
		case v.EmptyDir != nil:
			if emptyDirMode(v.EmptyDir) != nil {
				gate(p.Child("emptyDir", "mode"), "EmptyDirVolumeMode")
			}
		case v.Secret != nil:
			users(p.Child("secret"), secretDefaultUser(v.Secret), v.Secret.Items)
		case v.ConfigMap != nil:
			users(p.Child("configMap"), configMapDefaultUser(v.ConfigMap), v.ConfigMap.Items)
		case v.DownwardAPI != nil:
			if downwardDefaultUser(v.DownwardAPI) != nil {
				gate(p.Child("downwardAPI", "defaultUser"), "AtomicWriteVolumeUserFields")
			}
			downward(p.Child("downwardAPI"), v.DownwardAPI.Items)
		case v.Projected != nil:
			pp := p.Child("projected")
			if projectedDefaultUser(v.Projected) != nil {
				gate(pp.Child("defaultUser"), "AtomicWriteVolumeUserFields")
			}
			for j := range v.Projected.Sources {
				s := &v.Projected.Sources[j]
				sp := pp.Child("sources").Index(j)
				switch {
				case s.Secret != nil:
					users(sp.Child("secret"), nil, s.Secret.Items)
				case s.ConfigMap != nil:
					users(sp.Child("configMap"), nil, s.ConfigMap.Items)
				case s.DownwardAPI != nil:
					downward(sp.Child("downwardAPI"), s.DownwardAPI.Items)
				case s.ServiceAccountToken != nil && tokenUser(s.ServiceAccountToken) != nil:
					gate(sp.Child("serviceAccountToken", "user"), "AtomicWriteVolumeUserFields")
				case s.ClusterTrustBundle != nil && trustBundleUser(s.ClusterTrustBundle) != nil:
					gate(sp.Child("clusterTrustBundle", "user"), "AtomicWriteVolumeUserFields")
				case s.PodCertificate != nil && podCertificateUser(s.PodCertificate) != nil:
					gate(sp.Child("podCertificate", "user"), "AtomicWriteVolumeUserFields")
				}
			}
		}
	}
	container := func(p *field.Path, c *corev1.Container) {
		if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
			gate(p.Child("lifecycle", "stopSignal"), "ContainerStopSignals")
		}
		for j := range c.VolumeMounts {
			if len(mountBindOptions(&c.VolumeMounts[j])) > 0 {
				gate(p.Child("volumeMounts").Index(j).Child("bindMountOptions"), "VolumeBindMountOptions")
			}
		}
		for _, probe := range []struct {
			name string
			p    *corev1.Probe
		}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
			if probe.p != nil && probe.p.GRPC != nil && grpcMode(probe.p.GRPC) != nil {
				gate(p.Child(probe.name, "grpc", "mode"), "GRPCContainerProbeTLS")
			}
			if probe.p != nil && probe.p.HTTPGet != nil && httpGetProtocol(probe.p.HTTPGet) != nil {
				gate(p.Child(probe.name, "httpGet", "protocol"), "H2CContainerProbe")
			}
		}
		if lc := c.Lifecycle; lc != nil {
			for _, h := range []struct {
				name string
				h    *corev1.LifecycleHandler
			}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
				if h.h != nil && h.h.HTTPGet != nil && httpGetProtocol(h.h.HTTPGet) != nil {
					gate(p.Child("lifecycle", h.name, "httpGet", "protocol"), "H2CContainerProbe")
				}
			}
		}
	}
	for i := range spec.InitContainers {
		container(fld.Child("initContainers").Index(i), &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		container(fld.Child("containers").Index(i), &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		container(fld.Child("ephemeralContainers").Index(i), &c)
	}
	return errs
}
