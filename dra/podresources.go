package dra

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// GetDynamicResources is kubelet's containerManager.GetDynamicResources
// for the pod-resources API (podresources.WithDynamicResources): the
// claims the container lists (and the scheduler's claim for its extended
// resources), each with one entry per prepared device: its driver, pool,
// device, share ID and CDI devices. As kubelet's, a device's CDI devices
// include those of the driver's devices listed before it in the claim. An
// error (a claim not prepared) is logged and gives no resources, as
// kubelet's. Drivers come in name order (kubelet's in map order).
func (m *Manager) GetDynamicResources(pod *corev1.Pod, c *corev1.Container) []*podresourcesv1.DynamicResource {
	infos, err := m.containerClaims(pod, c)
	if err != nil {
		m.log.Error(err, "Unable to get container claim info state")
		return []*podresourcesv1.DynamicResource{}
	}
	var out []*podresourcesv1.DynamicResource
	for _, ci := range infos {
		var resources []*podresourcesv1.ClaimResource
		drivers := make([]string, 0, len(ci.DriverState))
		for name := range ci.DriverState {
			drivers = append(drivers, name)
		}
		slices.Sort(drivers)
		for _, driver := range drivers {
			var cdi []*podresourcesv1.CDIDevice
			for _, d := range ci.DriverState[driver].Devices {
				for _, id := range d.CDIDeviceIDs {
					cdi = append(cdi, &podresourcesv1.CDIDevice{Name: id})
				}
				resources = append(resources, &podresourcesv1.ClaimResource{
					CdiDevices: cdi, DriverName: driver, PoolName: d.PoolName, DeviceName: d.DeviceName,
					ShareId: (*string)(d.ShareID),
				})
			}
		}
		out = append(out, &podresourcesv1.DynamicResource{ClaimName: ci.ClaimName, ClaimNamespace: ci.Namespace, ClaimResources: resources})
	}
	return out
}

// containerClaims is kubelet's GetContainerClaimInfos: copies of the
// claims the container uses, in the pod's order.
func (m *Manager) containerClaims(pod *corev1.Pod, c *corev1.Container) ([]ClaimInfo, error) {
	if err := validatePod(pod); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("dra: nil container")
	}
	uses := make(map[string]bool, len(c.Resources.Claims))
	for _, cc := range c.Resources.Claims {
		uses[cc.Name] = true
	}
	var names []string
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		if !uses[pc.Name] {
			continue
		}
		name, _, err := claimName(pod, pc)
		if err != nil {
			return nil, err
		}
		if name != nil {
			names = append(names, *name)
		}
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		for _, rm := range st.RequestMappings {
			if rm.ContainerName == c.Name {
				names = append(names, st.ResourceClaimName)
				break
			}
		}
	}
	m.cache.RLock()
	defer m.cache.RUnlock()
	out := make([]ClaimInfo, 0, len(names))
	for _, name := range names {
		ci, ok := m.cache.get(name, pod.Namespace)
		if !ok {
			return nil, fmt.Errorf("unable to get information for ResourceClaim %s", name)
		}
		out = append(out, ci.deepCopy())
	}
	return out, nil
}
