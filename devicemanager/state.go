package devicemanager

import (
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/podstart/podstart/devicemanager/checkpoint"
)

// noTopology is kubelet's nodeWithoutTopology: the NUMA key of devices
// that report none.
const noTopology = -1

// allocation is one container's devices of one resource and the plugin's
// answer (kubelet's deviceAllocateInfo).
type allocation struct {
	ids  checkpoint.DevicesPerNUMA
	resp *pluginapi.ContainerAllocateResponse
}

// podDevices is kubelet's podDevices: pod UID → container → resource.
// Guarded by Manager.mu.
type podDevices map[string]map[string]map[string]allocation

func (p podDevices) insert(uid, cont, res string, ids checkpoint.DevicesPerNUMA, resp *pluginapi.ContainerAllocateResponse) {
	if p[uid] == nil {
		p[uid] = map[string]map[string]allocation{}
	}
	if p[uid][cont] == nil {
		p[uid][cont] = map[string]allocation{}
	}
	p[uid][cont][res] = allocation{ids: ids, resp: resp}
}

// containerDevices: nil when the container has no allocation of res.
func (p podDevices) containerDevices(uid, cont, res string) set {
	a, ok := p[uid][cont][res]
	if !ok {
		return nil
	}
	return newSet(a.ids.Devices()...)
}

// devices is every allocated device by resource (kubelet's devices()).
func (p podDevices) devices() map[string]set {
	out := map[string]set{}
	for _, conts := range p {
		for _, ress := range conts {
			for res, a := range ress {
				if out[res] == nil {
					out[res] = set{}
				}
				if a.resp != nil {
					for _, id := range a.ids.Devices() {
						out[res][id] = struct{}{}
					}
				}
			}
		}
	}
	return out
}

// addTo is kubelet's addContainerAllocatedResources.
func (p podDevices) addTo(uid, cont string, into map[string]set) {
	for res, a := range p[uid][cont] {
		into[res] = into[res].union(newSet(a.ids.Devices()...))
	}
}

// removeFrom is kubelet's removeContainerAllocatedResources.
func (p podDevices) removeFrom(uid, cont string, from map[string]set) {
	for res, a := range p[uid][cont] {
		from[res] = from[res].minus(newSet(a.ids.Devices()...))
	}
}

// entries is kubelet's toCheckpointData, sorted by pod, container and
// resource (kubelet writes them in map order).
func (p podDevices) entries() ([]checkpoint.PodDevicesEntry, error) {
	var out []checkpoint.PodDevicesEntry
	var errs []error
	for _, uid := range sortedKeys(p) {
		for _, cont := range sortedKeys(p[uid]) {
			for _, res := range sortedKeys(p[uid][cont]) {
				a := p[uid][cont][res]
				if a.resp == nil {
					continue
				}
				b, err := proto.Marshal(a.resp)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				out = append(out, checkpoint.PodDevicesEntry{PodUID: uid, ContainerName: cont, ResourceName: res, DeviceIDs: a.ids, AllocResp: b})
			}
		}
	}
	return out, errors.Join(errs...)
}

// checkpointNow returns the checkpoint of the current state; m.mu is
// held.
func (m *Manager) checkpointNow() (checkpoint.Checkpoint, error) {
	entries, err := m.pods.entries()
	reg := make(map[string][]string, len(m.healthy))
	for res, devs := range m.healthy {
		reg[res] = devs.sorted()
	}
	return checkpoint.Checkpoint{Entries: entries, RegisteredDevices: reg}, err
}

// writeCheckpoint is kubelet's writeCheckpoint.
func (m *Manager) writeCheckpoint() error {
	m.mu.Lock()
	cp, err := m.checkpointNow()
	m.mu.Unlock()
	if err != nil {
		m.log.Error(err, "Can't marshal allocResp")
	}
	return checkpoint.Write(m.o.dir, cp)
}

// readCheckpoint is kubelet's readCheckpoint: allocations come back, and
// each registered resource gets a stopped endpoint, so that it is deleted
// after the grace period unless its plugin registers again.
func (m *Manager) readCheckpoint() error {
	cp, err := checkpoint.Read(m.o.dir)
	if errors.Is(err, checkpoint.ErrNotFound) {
		m.mu.Lock()
		m.noCkpt = true
		m.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, e := range cp.Entries {
		resp := &pluginapi.ContainerAllocateResponse{}
		if err := proto.Unmarshal(e.AllocResp, resp); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := validateResponse(resp); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint entry of pod %s container %s: %w", e.PodUID, e.ContainerName, err))
			continue
		}
		m.pods.insert(e.PodUID, e.ContainerName, e.ResourceName, e.DeviceIDs, resp)
	}
	m.allocated = m.pods.devices()
	now := m.o.clock.Now()
	for res := range cp.RegisteredDevices {
		m.healthy[res] = set{}
		m.unhealthy[res] = set{}
		m.endpoints[res] = &endpoint{resource: res, stopTime: now}
	}
	return errors.Join(errs...)
}

// ShouldResetExtendedResourceCapacity is kubelet's: true when there was no
// checkpoint at Start (a new node, or one whose state was wiped), so the
// Node's extended resources of an earlier life should be zeroed.
func (m *Manager) ShouldResetExtendedResourceCapacity() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.noCkpt
}

func sortedIDs(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return out
}
