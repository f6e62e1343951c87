package criconfig

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Refusals lists the pod settings podstart refuses rather than ignores:
// each affects isolation or placement, and a container created without it
// would not be the container its pod asked for. TestRefusals walks it.
var Refusals = []string{
	"spec.os.name: windows (podstart runs Linux containers only)",
	"spec.hostUsers: false on a runtime without user namespaces or a node without a UserNamespaceMapper",
	"spec.resourceClaims and containers[*].resources.claims (dynamic resource allocation) on a node without a DRA manager (Node.DynamicResourceAllocation)",
	"containers[*].volumeDevices (raw block volumes) on a node without a volume manager that maps them (Node.BlockVolumes)",
	"securityContext.appArmorProfile other than Unconfined on a node without AppArmor (Node.AppArmorEnabled)",
	"spec.securityContext.supplementalGroupsPolicy: Strict on a runtime that does not report it (Node.SupplementalGroupsPolicyStrict)",
}

func unsupported(format string, args ...any) error {
	return classErrorf(ErrUnsupported, format, args...)
}

// checkPod refuses pod-level settings podstart cannot honour.
func checkPod(pod *corev1.Pod, node Node) error {
	if pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows {
		return unsupported("spec.os.name: %q: podstart runs Linux containers only", pod.Spec.OS.Name)
	}
	if len(pod.Spec.ResourceClaims) > 0 && !node.DynamicResourceAllocation {
		return unsupported("spec.resourceClaims: dynamic resource allocation is not supported")
	}
	// kubelet's AppArmor admission refuses the whole pod, before any
	// sandbox, when one container asks for a profile the host cannot apply.
	if !node.AppArmorEnabled {
		var err error
		visitContainers(pod, func(c *corev1.Container) bool {
			if p := AppArmorProfile(pod, c); p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined {
				err = unsupported("%s: Cannot enforce AppArmor: AppArmor is not enabled on the host", fieldOf(pod, c, "appArmorProfile"))
				return false
			}
			return true
		})
		return err
	}
	return nil
}

// visitContainers calls f for init, app and ephemeral containers until it
// returns false.
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

// checkVolumeDevices refuses a volumeDevice whose device the node's
// volume manager did not give (no silent drops).
func checkVolumeDevices(c *corev1.Container, devices []*runtimeapi.Device) error {
	for _, d := range c.VolumeDevices {
		found := false
		for _, dev := range devices {
			if dev.GetContainerPath() == d.DevicePath {
				found = true
				break
			}
		}
		if !found {
			return unsupported("container %q volumeDevices %q: no device mapped for %s", c.Name, d.Name, d.DevicePath)
		}
	}
	return nil
}

// checkContainer refuses container settings podstart cannot honour.
func checkContainer(pod *corev1.Pod, c *corev1.Container, node Node) error {
	if err := checkPod(pod, node); err != nil {
		return err
	}
	if len(c.VolumeDevices) > 0 && !node.BlockVolumes {
		return unsupported("container %q volumeDevices: raw block volumes are not supported", c.Name)
	}
	if len(c.Resources.Claims) > 0 && !node.DynamicResourceAllocation {
		return unsupported("container %q resources.claims: dynamic resource allocation is not supported", c.Name)
	}
	return nil
}
