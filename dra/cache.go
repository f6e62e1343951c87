package dra

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// claimInfo is kubelet's ClaimInfo: the checkpointed state and whether
// the claim was prepared since this manager started (a claim read from
// the checkpoint is not: kubelet prepares it again when a pod needs it,
// and drivers answer idempotently), and whether its unprepare started.
type claimInfo struct {
	ClaimInfo
	prepared    bool
	unpreparing bool
}

func (c *claimInfo) addDevice(driver string, d Device) {
	ds := c.DriverState[driver]
	ds.Devices = append(ds.Devices, d)
	c.DriverState[driver] = ds
}

func (c *claimInfo) resetDevices(driver string) {
	ds, ok := c.DriverState[driver]
	if !ok {
		return
	}
	ds.Devices = nil
	c.DriverState[driver] = ds
}

// deepCopy copies what GetResources and State read outside the lock.
func (c *ClaimInfo) deepCopy() ClaimInfo {
	out := *c
	out.PodUIDs = c.PodUIDs.Clone()
	out.DriverState = make(map[string]DriverState, len(c.DriverState))
	for name, ds := range c.DriverState {
		nds := DriverState{SkipNodeOperations: slices.Clone(ds.SkipNodeOperations)}
		if ds.Devices != nil {
			nds.Devices = make([]Device, len(ds.Devices))
			for i, d := range ds.Devices {
				nd := d
				if d.ShareID != nil {
					id := *d.ShareID
					nd.ShareID = &id
				}
				nd.RequestNames = slices.Clone(d.RequestNames)
				nd.CDIDeviceIDs = slices.Clone(d.CDIDeviceIDs)
				nds.Devices[i] = nd
			}
		}
		out.DriverState[name] = nds
	}
	return out
}

// claimCache is kubelet's claimInfoCache: claims by namespace/name, and
// the checkpoint written after each change.
type claimCache struct {
	sync.RWMutex
	path   string
	claims map[string]*claimInfo
}

func key(namespace, name string) string { return namespace + "/" + name }

func (c *claimCache) get(name, namespace string) (*claimInfo, bool) {
	ci, ok := c.claims[key(namespace, name)]
	return ci, ok
}

func (c *claimCache) add(ci *claimInfo) { c.claims[key(ci.Namespace, ci.ClaimName)] = ci }

func (c *claimCache) delete(name, namespace string) { delete(c.claims, key(namespace, name)) }

func (c *claimCache) hasPodReference(uid types.UID) bool {
	for _, ci := range c.claims {
		if ci.PodUIDs.Has(string(uid)) {
			return true
		}
	}
	return false
}

func (c *claimCache) claimNamesForPod(uid types.UID) []string {
	var names []string
	for _, ci := range c.claims {
		if ci.PodUIDs.Has(string(uid)) {
			names = append(names, ci.ClaimName)
		}
	}
	slices.Sort(names)
	return names
}

// list is the cache's claims ordered by namespace and name (kubelet's
// checkpoint lists them in map order).
func (c *claimCache) list() []ClaimInfo {
	out := make([]ClaimInfo, 0, len(c.claims))
	for _, ci := range c.claims {
		out = append(out, ci.ClaimInfo)
	}
	slices.SortFunc(out, func(a, b ClaimInfo) int {
		if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return strings.Compare(a.ClaimName, b.ClaimName)
	})
	return out
}

// sync writes the checkpoint; the caller holds the write lock.
func (c *claimCache) sync() error { return writeCheckpoint(c.path, c.list()) }
