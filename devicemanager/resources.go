package devicemanager

import (
	"sort"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/podstart/podstart/devicemanager/checkpoint"
)

// GetDevices is kubelet's GetDevices for the pod-resources API: the
// container's devices, one entry per device and NUMA node (devices
// without topology: one entry without it), by resource and ID.
func (m *Manager) GetDevices(podUID, containerName string) []*podresourcesv1.ContainerDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*podresourcesv1.ContainerDevices
	ress := m.pods[podUID][containerName]
	for _, res := range sortedKeys(ress) {
		out = append(out, containerDevices(res, ress[res].ids)...)
	}
	return out
}

func containerDevices(res string, ids checkpoint.DevicesPerNUMA) []*podresourcesv1.ContainerDevices {
	nodes := make([]int64, 0, len(ids))
	for n := range ids {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	var out []*podresourcesv1.ContainerDevices
	for _, n := range nodes {
		for _, id := range sortedIDs(ids[n]) {
			cd := &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: []string{id}}
			if n != noTopology {
				cd.Topology = &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: n}}}
			}
			out = append(out, cd)
		}
	}
	return out
}

// GetAllocatableDevices is kubelet's GetAllocatableDevices for the
// pod-resources API: the healthy devices, one entry per device and NUMA
// node.
func (m *Manager) GetAllocatableDevices() []*podresourcesv1.ContainerDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*podresourcesv1.ContainerDevices
	for _, res := range sortedKeys(m.healthy) {
		all := m.all[res]
		for _, id := range m.healthy[res].sorted() {
			d := all[id]
			if d == nil {
				continue
			}
			nodes := d.GetTopology().GetNodes()
			if len(nodes) == 0 {
				out = append(out, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: []string{id}})
				continue
			}
			for _, n := range nodes {
				out = append(out, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: []string{id},
					Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: n.GetID()}}}})
			}
		}
	}
	return out
}
