package staticpods

import corev1 "k8s.io/api/core/v1"

// apiReference is kubelet's podutil.HasAPIObjectReference: the kind of API
// object a static pod refers to (which kubelet refuses, as a static pod
// must run without the API server), or "" for none.
func apiReference(pod *corev1.Pod) string {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return "serviceaccounts"
	}
	if hasSecret(spec) {
		return "secrets"
	}
	if hasConfigMap(spec) {
		return "configmaps"
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)"
		case v.Secret != nil:
			return "secrets (via secret volumes)"
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)"
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)"
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims"
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)"
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)"
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return "configmaps (via projected volumes)"
				case s.Secret != nil:
					return "secrets (via projected volumes)"
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)"
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				case s.PodCertificate != nil:
					return "podcertificates"
				}
			}
		}
	}
	return ""
}

// containers calls f for every container of the pod, ephemeral ones too.
func containers(spec *corev1.PodSpec, f func(*corev1.Container) bool) bool {
	for i := range spec.InitContainers {
		if f(&spec.InitContainers[i]) {
			return true
		}
	}
	for i := range spec.Containers {
		if f(&spec.Containers[i]) {
			return true
		}
	}
	for i := range spec.EphemeralContainers {
		if f((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return true
		}
	}
	return false
}

// hasSecret is kubelet's VisitPodSecretNames finding any name.
func hasSecret(spec *corev1.PodSpec) bool {
	if len(spec.ImagePullSecrets) > 0 {
		return true
	}
	if containers(spec, func(c *corev1.Container) bool {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for _, v := range spec.Volumes {
		switch {
		case v.AzureFile != nil && v.AzureFile.SecretName != "",
			v.CephFS != nil && v.CephFS.SecretRef != nil,
			v.Cinder != nil && v.Cinder.SecretRef != nil,
			v.FlexVolume != nil && v.FlexVolume.SecretRef != nil,
			v.RBD != nil && v.RBD.SecretRef != nil,
			v.Secret != nil,
			v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
			v.ISCSI != nil && v.ISCSI.SecretRef != nil,
			v.StorageOS != nil && v.StorageOS.SecretRef != nil,
			v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			return true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}

// hasConfigMap is kubelet's VisitPodConfigmapNames finding any name.
func hasConfigMap(spec *corev1.PodSpec) bool {
	if containers(spec, func(c *corev1.Container) bool {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					return true
				}
			}
		}
	}
	return false
}
