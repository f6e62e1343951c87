package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OS is the first check of kubelet's predicate admit handler: a pod whose
// kubernetes.io/os label (its labels, not its nodeSelector: kubelet's
// check) names another OS than nodeOS is rejected with
// PodOSSelectorNodeLabelDoesNotMatch; one whose spec.os.name is not nodeOS
// with PodOSNotSupported. Kubelet compares with the OS it was built for
// (runtime.GOOS), whatever the node's label says.
func OS(pod *corev1.Pod, nodeOS string) error {
	if os, ok := pod.Labels[corev1.LabelOSStable]; ok && os != nodeOS {
		return Reject(ReasonPodOSSelectorNodeLabelDoesNotMatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return Reject(ReasonPodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS")
	}
	return nil
}

// SupplementalGroupsPolicy is kubelet's check (the feature is GA): a pod
// asking for supplementalGroupsPolicy Strict on a node whose status does
// not report the feature (status.features.supplementalGroupsPolicy) is
// rejected with SupplementalGroupsPolicyNotSupported.
func SupplementalGroupsPolicy(pod *corev1.Pod, node *corev1.Node) error {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
		return nil
	}
	if f := node.Status.Features; f != nil && f.SupplementalGroupsPolicy != nil && *f.SupplementalGroupsPolicy {
		return nil
	}
	return Reject(ReasonSupplementalGroupsPolicyNotSupported, fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", corev1.SupplementalGroupsPolicyStrict))
}

// AppArmor is kubelet's AppArmor admit handler (Linux nodes): a Pending
// pod that asks for an AppArmor profile other than Unconfined (pod or
// container securityContext, or the deprecated annotation) is rejected
// with reason AppArmor when the host does not enforce AppArmor, or when a
// Localhost profile has no name.
func AppArmor(pod *corev1.Pod, enabled bool) error {
	if pod.Status.Phase != corev1.PodPending || !appArmorRequired(pod) {
		return nil
	}
	if !enabled {
		return Reject(ReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host")
	}
	var err error
	visitContainers(pod, func(c *corev1.Container) bool {
		p := appArmorProfile(pod, c)
		if p != nil && p.Type == corev1.AppArmorProfileTypeLocalhost && (p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
			err = Reject(ReasonAppArmor, fmt.Sprintf("Cannot enforce AppArmor: invalid empty AppArmor profile name: %q", p))
			return false
		}
		return true
	})
	return err
}

// appArmorRequired is kubelet's apparmor.isRequired.
func appArmorRequired(pod *corev1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
		return true
	}
	required := false
	visitContainers(pod, func(c *corev1.Container) bool {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
			required = true
			return false
		}
		return true
	})
	if required {
		return true
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			return v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined
		}
	}
	return false
}

// appArmorProfile is kubelet's apparmor.GetProfile: the container's field,
// else its annotation, else the pod's field.
func appArmorProfile(pod *corev1.Pod, c *corev1.Container) *corev1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if v, ok := pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
		// An annotation with another value is ignored.
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.AppArmorProfile
	}
	return nil
}

// visitContainers calls f for init, app and ephemeral containers until it
// returns false (kubelet's podutil.AllContainers).
func visitContainers(pod *corev1.Pod, f func(*corev1.Container) bool) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !f(&list[i]) {
				return
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if !f(&c) {
			return
		}
	}
}
