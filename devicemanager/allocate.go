package devicemanager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/podstart/podstart/admission"
	"github.com/podstart/podstart/devicemanager/checkpoint"
)

// Admit is kubelet's allocate-resources admit handler with its topology
// manager's policy "none": each init container, then each app container,
// gets its devices (Allocate). A failure rejects the pod with kubelet's
// UnexpectedAdmissionError, "Allocate failed due to <error>, which is
// unexpected". admitted are the active pods (admission.Handler); devices
// of pods no longer among them, nor the pod itself, are freed first
// (UpdateAllocatedDevices). Admit matches admission.Handler: put it in
// admission.Config.Resources.
func (m *Manager) Admit(ctx context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error {
	active := make([]*corev1.Pod, 0, len(admitted)+1)
	active = append(active, admitted...)
	active = append(active, pod)
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := list[i]
			if err := m.allocate(ctx, pod, &c, active, true); err != nil {
				return admission.Reject(admission.ReasonUnexpectedAdmissionError, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err))
			}
		}
	}
	return nil
}

// Allocate is kubelet's Allocate for one container of pod: the devices of
// its extended-resource limits that device plugins serve, chosen among
// the healthy free ones (init containers' devices are reusable by the
// containers after them), each resource's plugin asked
// (GetPreferredAllocation when it offers it, then Allocate), and the
// checkpoint written. active, when not nil, are the active pods: devices
// of pods not among them are freed first. Errors match ErrAllocate.
func (m *Manager) Allocate(ctx context.Context, pod *corev1.Pod, c *corev1.Container, active []*corev1.Pod) error {
	return m.allocate(ctx, pod, c, active, active != nil)
}

func (m *Manager) allocate(ctx context.Context, pod *corev1.Pod, c *corev1.Container, active []*corev1.Pod, update bool) error {
	m.allocMu.Lock()
	defer m.allocMu.Unlock()
	uid := string(pod.UID)
	m.mu.Lock()
	if m.reuse[uid] == nil {
		m.reuse[uid] = map[string]set{}
	}
	for other := range m.reuse {
		if other != uid {
			delete(m.reuse, other)
		}
	}
	reuse := m.reuse[uid]
	m.mu.Unlock()
	if err := m.allocateContainer(ctx, pod, c, reuse, active, update); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if isInit(pod, c.Name) {
		if !isRestartableInit(pod, c.Name) {
			m.pods.addTo(uid, c.Name, reuse)
		} else {
			m.pods.removeFrom(uid, c.Name, reuse)
		}
		return nil
	}
	m.pods.removeFrom(uid, c.Name, reuse)
	return nil
}

func isInit(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	return false
}

func isRestartableInit(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == name {
			return ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// isDevicePluginResource: registered (reported devices) or allocated.
func (m *Manager) isDevicePluginResource(res string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, reg := m.healthy[res]
	_, alloc := m.allocated[res]
	return reg || alloc
}

// isDRAExtendedResource: the pod's extended resource is backed by a DRA
// claim (DRAExtendedResource, GA in v1.37); the DRA manager serves it.
func isDRAExtendedResource(pod *corev1.Pod, cont, res string) bool {
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		for _, rm := range st.RequestMappings {
			if rm.ContainerName == cont && rm.ResourceName == res {
				return true
			}
		}
	}
	return false
}

// allocateContainer is kubelet's allocateContainerResources.
func (m *Manager) allocateContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, reuse map[string]set, active []*corev1.Pod, update bool) error {
	uid := string(pod.UID)
	updated, changed := false, false
	for _, name := range sortedKeys(c.Resources.Limits) {
		q := c.Resources.Limits[corev1.ResourceName(name)]
		needed := int(q.Value())
		if isDRAExtendedResource(pod, c.Name, name) || !m.isDevicePluginResource(name) {
			continue
		}
		if !updated && update {
			m.UpdateAllocatedDevices(active)
			updated = true
		}
		devs, err := m.devicesToAllocate(ctx, uid, c.Name, name, needed, reuse[name])
		if err != nil {
			return allocErr{err}
		}
		if len(devs) == 0 {
			continue
		}
		changed = true
		m.mu.Lock()
		e, ok := m.endpoints[name]
		m.mu.Unlock()
		if !ok {
			m.resetAllocated()
			return allocErr{fmt.Errorf("unknown Device Plugin %s", name)}
		}
		resp, err := m.callAllocate(ctx, e, devs.sorted())
		if err != nil {
			m.resetAllocated()
			return allocErr{err}
		}
		m.mu.Lock()
		perNUMA := checkpoint.DevicesPerNUMA{}
		for _, id := range devs.sorted() {
			d := m.all[name][id]
			if d == nil || d.Topology == nil || len(d.Topology.Nodes) == 0 {
				perNUMA[noTopology] = append(perNUMA[noTopology], id)
				continue
			}
			for _, n := range d.Topology.Nodes {
				perNUMA[n.ID] = append(perNUMA[n.ID], id)
			}
		}
		m.pods.insert(uid, c.Name, name, perNUMA, resp)
		m.mu.Unlock()
	}
	if changed {
		if err := m.writeCheckpoint(); err != nil {
			return allocErr{fmt.Errorf("failed to write checkpoint file %q: %v", checkpoint.FileName, err)}
		}
	}
	return nil
}

// allocErr makes an allocation error match ErrAllocate and keep its own.
type allocErr struct{ err error }

func (e allocErr) Error() string   { return e.err.Error() }
func (e allocErr) Unwrap() []error { return []error{ErrAllocate, e.err} }

func (m *Manager) resetAllocated() {
	m.mu.Lock()
	m.allocated = m.pods.devices()
	m.mu.Unlock()
}

// callAllocate calls the plugin's Allocate for one container and checks
// its answer.
func (m *Manager) callAllocate(ctx context.Context, e *endpoint, devs []string) (*pluginapi.ContainerAllocateResponse, error) {
	m.mu.Lock()
	stopped := !e.stopTime.IsZero()
	m.mu.Unlock()
	if stopped || e.client == nil {
		return nil, fmt.Errorf("endpoint %s has been stopped", e.resource)
	}
	resp, err := e.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: devs}}})
	if err != nil {
		return nil, err
	}
	if len(resp.ContainerResponses) == 0 || resp.ContainerResponses[0] == nil {
		return nil, fmt.Errorf("no containers return in allocation response %v", resp)
	}
	r := resp.ContainerResponses[0]
	if err := validateResponse(r); err != nil {
		return nil, fmt.Errorf("device plugin %s: %w", e.resource, err)
	}
	return r, nil
}

// UpdateAllocatedDevices is kubelet's: the devices of pods not among
// active are freed, unless the sources are not ready yet
// (WithSourcesReady).
func (m *Manager) UpdateAllocatedDevices(active []*corev1.Pod) {
	if m.o.sourcesReady != nil && !m.o.sourcesReady() {
		return
	}
	keep := make(map[string]bool, len(active))
	for _, p := range active {
		if p != nil {
			keep[string(p.UID)] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	removed := false
	for uid := range m.pods {
		if !keep[uid] {
			delete(m.pods, uid)
			removed = true
		}
	}
	if removed {
		m.allocated = m.pods.devices()
	}
}

// devicesToAllocate is kubelet's devicesToAllocate with its topology
// manager's policy "none" (no NUMA hint: every free device is a
// candidate). Devices are taken in order of their IDs where kubelet takes
// them in map order.
func (m *Manager) devicesToAllocate(ctx context.Context, uid, cont, res string, required int, reusable set) (set, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	needed := required
	have := m.pods.containerDevices(uid, cont, res)
	if have != nil {
		needed -= len(have)
		if needed != 0 {
			return nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", uid, cont, res, len(have), required)
		}
	}
	healthy, registered := m.healthy[res]
	if !registered {
		return nil, fmt.Errorf("cannot allocate unregistered device %s", res)
	}
	if len(healthy) == 0 {
		return nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", res)
	}
	for id := range have {
		if !healthy.has(id) {
			return nil, fmt.Errorf("previously allocated devices are no longer healthy; cannot allocate unhealthy devices %s", res)
		}
	}
	if needed == 0 {
		return nil, nil
	}
	got := set{}
	take := func(from set) bool {
		if m.allocated[res] == nil {
			m.allocated[res] = set{}
		}
		for _, id := range from.minus(got).sorted() {
			m.allocated[res][id] = struct{}{}
			got[id] = struct{}{}
			needed--
			if needed == 0 {
				return true
			}
		}
		return false
	}
	if take(reusable) {
		return got, nil
	}
	available := healthy.minus(m.allocated[res])
	if len(available) < needed {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", res, needed, len(available))
	}
	preferred, err := m.preferred(ctx, uid, cont, res, available.union(got), got, required)
	if err != nil {
		return nil, err
	}
	if take(intersect(preferred, available)) {
		return got, nil
	}
	if take(available) {
		return got, nil
	}
	return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, required-needed)
}

func intersect(a, b set) set {
	r := set{}
	for id := range a {
		if b.has(id) {
			r[id] = struct{}{}
		}
	}
	return r
}

// preferred is kubelet's callGetPreferredAllocationIfAvailable; m.mu is
// held and released around the call. IDs the plugin invents are dropped
// by the caller's intersection with the available devices.
func (m *Manager) preferred(ctx context.Context, uid, cont, res string, available, mustInclude set, size int) (set, error) {
	e, ok := m.endpoints[res]
	if !ok {
		return nil, fmt.Errorf("endpoint not found in cache for a registered resource: %s", res)
	}
	if e.opts == nil || !e.opts.GetPreferredAllocationAvailable {
		return nil, nil
	}
	stopped := !e.stopTime.IsZero()
	m.mu.Unlock()
	var resp *pluginapi.PreferredAllocationResponse
	var err error
	if stopped || e.client == nil {
		err = fmt.Errorf("endpoint %s has been stopped", e.resource)
	} else {
		resp, err = e.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: available.sorted(), MustIncludeDeviceIDs: mustInclude.sorted(), AllocationSize: int32(size),
		}}})
	}
	m.mu.Lock()
	if err != nil {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %v", err)
	}
	if resp != nil && len(resp.ContainerResponses) > 0 && resp.ContainerResponses[0] != nil {
		return newSet(resp.ContainerResponses[0].DeviceIDs...), nil
	}
	return set{}, nil
}

// UpdatePluginResources is kubelet's UpdatePluginResources (the predicate
// admit handler's sanitizeNodeAllocatable): for a pod with devices, node
// with each device resource's allocatable raised to at least the devices
// allocated, so that a Node status not yet updated does not refuse pods
// the devices were given to. It returns node itself when nothing changes,
// else a copy. Use it as admission.Config.UpdatePluginResources.
func (m *Manager) UpdatePluginResources(pod *corev1.Pod, node *corev1.Node) *corev1.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[string(pod.UID)]; !ok || node == nil {
		return node
	}
	var out *corev1.Node
	for res, devs := range m.allocated {
		q, ok := node.Status.Allocatable[corev1.ResourceName(res)]
		if ok && int(q.Value()) >= len(devs) {
			continue
		}
		if out == nil {
			out = node.DeepCopy()
			if out.Status.Allocatable == nil {
				out.Status.Allocatable = corev1.ResourceList{}
			}
		}
		out.Status.Allocatable[corev1.ResourceName(res)] = *resourceQuantity(len(devs))
	}
	if out == nil {
		return node
	}
	return out
}
