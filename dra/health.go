package dra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

// Device health, kubelet v1.37.2's ResourceHealthStatus (beta, on by
// default): a driver that lists a DRAResourceHealth service in its
// registration is watched (NodeWatchResources, restarted 5s after it
// ends unless the driver answers Unimplemented), each report updates the
// health cache, and pods using a device whose health changed are handed
// to the WithHealthChange callback so that their status is generated
// again. UpdateAllocatedResourcesStatus fills containers'
// allocatedResourcesStatus from the cache.

// DefaultHealthTimeout is how long a device's reported health holds when
// its report gives no timeout (kubelet's DefaultHealthTimeout): after it,
// the device reads Unknown.
const DefaultHealthTimeout = 30 * time.Second

// healthRetry is how long after a stream ended it is opened again
// (kubelet's wait.UntilWithContext period).
const healthRetry = 5 * time.Second

// maxHealthDevicesPerDriver caps the devices the cache keeps per driver
// (kubelet's maxDevicesPerDriver).
const maxHealthDevicesPerDriver = 16384

// healthServices are the DRAResourceHealth services kubelet speaks, most
// recent first.
var healthServices = []string{drahealthv1.DRAResourceHealthService, drahealthv1alpha1.DRAResourceHealthService}

// pickHealthService is kubelet's: the most recent health service the
// plugin lists, or "".
func pickHealthService(versions []string) string {
	for _, s := range healthServices {
		if slices.Contains(versions, s) {
			return s
		}
	}
	return ""
}

// WithHealthChange sets what is called with the pods that use a device
// whose health changed (kubelet then updates those pods' status; a node
// agent resyncs them).
func WithHealthChange(f func([]types.UID)) Option { return func(m *Manager) { m.onHealth = f } }

// WithClock sets the clock the health cache reads (default time.Now).
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

type deviceHealth struct {
	health  corev1.ResourceHealthStatus
	message string
	updated time.Time
	timeout time.Duration
}

// healthCache is kubelet's healthInfoCache, in memory (see the package
// doc's differences): devices' health by driver, then "pool/device".
type healthCache struct {
	mu      sync.RWMutex
	drivers map[string]map[string]deviceHealth
}

// get is kubelet's getHealthInfo: Unknown for a device never reported or
// whose report timed out.
func (h *healthCache) get(now time.Time, driver, pool, device string) (corev1.ResourceHealthStatus, string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	d, ok := h.drivers[driver][pool+"/"+device]
	if !ok || now.Sub(d.updated) > d.timeout {
		return corev1.ResourceHealthStatusUnknown, ""
	}
	return d.health, d.message
}

type reportedDevice struct {
	pool, device string
	deviceHealth
}

// update is kubelet's updateHealthInfo: records a driver's report and
// returns the devices whose health, message or timeout changed,
// including devices no longer reported whose health timed out (they turn
// Unknown and leave the cache).
func (h *healthCache) update(now time.Time, driver string, devices []reportedDevice) []reportedDevice {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.drivers == nil {
		h.drivers = map[string]map[string]deviceHealth{}
	}
	cur := h.drivers[driver]
	if cur == nil {
		cur = map[string]deviceHealth{}
		h.drivers[driver] = cur
	}
	var changed []reportedDevice
	reported := map[string]bool{}
	for _, d := range devices {
		d.updated = now
		k := d.pool + "/" + d.device
		reported[k] = true
		old, ok := cur[k]
		if !ok && len(cur) >= maxHealthDevicesPerDriver {
			continue
		}
		if !ok || old.health != d.health || old.message != d.message || old.timeout != d.timeout {
			changed = append(changed, d)
		}
		cur[k] = d.deviceHealth
	}
	for k, old := range cur {
		if reported[k] || now.Sub(old.updated) <= old.timeout {
			continue
		}
		if old.health != corev1.ResourceHealthStatusUnknown {
			pool, device, _ := strings.Cut(k, "/")
			changed = append(changed, reportedDevice{pool: pool, device: device,
				deviceHealth: deviceHealth{health: corev1.ResourceHealthStatusUnknown, updated: now, timeout: old.timeout}})
		}
		delete(cur, k)
	}
	return changed
}

func (h *healthCache) clear(driver string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.drivers, driver)
}

// fromReport is kubelet's buildDeviceHealth.
func fromReport(d *drahealthv1.DeviceHealth) reportedDevice {
	timeout := DefaultHealthTimeout
	if s := d.GetHealthCheckTimeoutSeconds(); s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	h := corev1.ResourceHealthStatusUnknown
	switch d.GetHealth() {
	case drahealthv1.HealthStatus_HEALTHY:
		h = corev1.ResourceHealthStatusHealthy
	case drahealthv1.HealthStatus_UNHEALTHY:
		h = corev1.ResourceHealthStatusUnhealthy
	}
	return reportedDevice{pool: d.GetDevice().GetPoolName(), device: d.GetDevice().GetDeviceName(),
		deviceHealth: deviceHealth{health: h, message: truncateHealthMessage(d.GetMessage()), timeout: timeout}}
}

// truncateHealthMessage is kubelet's: at most
// ResourceHealthMessageMaxLength bytes, "..." ending a cut one; the cut
// keeps whole UTF-8 characters (kubelet cuts bytes).
func truncateHealthMessage(msg string) string {
	if len(msg) <= corev1.ResourceHealthMessageMaxLength {
		return msg
	}
	cut := msg[:corev1.ResourceHealthMessageMaxLength-3]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "..."
}

// watchHealth keeps a stream of the plugin's health reports open until
// ctx ends or the driver answers Unimplemented; the driver's cached
// health is dropped whenever a stream ends, as kubelet's.
func (m *Manager) watchHealth(ctx context.Context, p *plugin) {
	for {
		err := m.watchHealthOnce(ctx, p)
		m.health.clear(p.driver)
		if status.Code(err) == codes.Unimplemented {
			m.log.V(2).Info("Driver does not support WatchResources health stream, stopping", "driverName", p.driver)
			return
		}
		m.log.V(2).Info("WatchResources health stream has ended", "driverName", p.driver, "err", err)
		t := time.NewTimer(healthRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (m *Manager) watchHealthOnce(ctx context.Context, p *plugin) error {
	var stream drahealthv1.DRAResourceHealth_NodeWatchResourcesClient
	var err error
	if p.healthService == drahealthv1alpha1.DRAResourceHealthService {
		stream, err = drahealthv1.V1Alpha1ClientWrapper{Client: drahealthv1alpha1.NewDRAResourceHealthClient(p.conn)}.
			NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
	} else {
		stream, err = drahealthv1.NewDRAResourceHealthClient(p.conn).NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
	}
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		devices := make([]reportedDevice, 0, len(resp.GetDevices()))
		for _, d := range resp.GetDevices() {
			devices = append(devices, fromReport(d))
		}
		changed := m.health.update(m.now(), p.driver, devices)
		if len(changed) == 0 || m.onHealth == nil {
			continue
		}
		if uids := m.podsUsing(p.driver, changed); len(uids) > 0 {
			m.onHealth(uids)
		}
	}
}

// podsUsing lists, sorted, the pods whose claims hold one of the
// driver's devices.
func (m *Manager) podsUsing(driver string, devices []reportedDevice) []types.UID {
	want := map[string]bool{}
	for _, d := range devices {
		want[d.pool+"/"+d.device] = true
	}
	seen := map[types.UID]bool{}
	m.cache.RLock()
	for _, ci := range m.cache.claims {
		for _, d := range ci.DriverState[driver].Devices {
			if want[d.PoolName+"/"+d.DeviceName] {
				for uid := range ci.PodUIDs {
					seen[types.UID(uid)] = true
				}
			}
		}
	}
	m.cache.RUnlock()
	out := make([]types.UID, 0, len(seen))
	for uid := range seen {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}

// UpdateAllocatedResourcesStatus is kubelet's: each container of status
// whose spec lists claims gets, per claim (or claim request),
// "claim:<name>[/<request>]" with the health of each prepared device of
// it (its first CDI device ID, else <driver>/<pool>/<device>; Unknown
// unless its driver reported it), replacing what it had for them. Claims
// not prepared on this node are left out. Kubelet calls it on every
// status it generates, with ResourceHealthStatus on (the default).
func (m *Manager) UpdateAllocatedResourcesStatus(pod *corev1.Pod, st *corev1.PodStatus) {
	now := m.now()
	generated := map[string]string{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			generated[s.Name] = *s.ResourceClaimName
		}
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		var spec *corev1.Container
		for j := range pod.Spec.Containers {
			if pod.Spec.Containers[j].Name == cs.Name {
				spec = &pod.Spec.Containers[j]
				break
			}
		}
		if spec == nil || len(spec.Resources.Claims) == 0 {
			continue
		}
		byName := map[corev1.ResourceName]*corev1.ResourceStatus{}
		var order []corev1.ResourceName
		for j := range cs.AllocatedResourcesStatus {
			n := cs.AllocatedResourcesStatus[j].Name
			rs := cs.AllocatedResourcesStatus[j]
			byName[n] = &rs
			order = append(order, n)
		}
		for _, c := range spec.Resources.Claims {
			name := generated[c.Name]
			if name == "" {
				for k := range pod.Spec.ResourceClaims {
					if pod.Spec.ResourceClaims[k].Name == c.Name {
						if n, _, err := claimName(pod, &pod.Spec.ResourceClaims[k]); err == nil && n != nil {
							name = *n
						}
						break
					}
				}
			}
			if name == "" {
				continue
			}
			resources, ok := m.claimHealth(now, pod.Namespace, name, c.Request)
			if !ok {
				continue
			}
			rn := corev1.ResourceName("claim:" + c.Name)
			if c.Request != "" {
				rn = corev1.ResourceName("claim:" + c.Name + "/" + c.Request)
			}
			rs, ok := byName[rn]
			if !ok {
				rs = &corev1.ResourceStatus{Name: rn}
				byName[rn] = rs
				order = append(order, rn)
			}
			rs.Resources = resources
		}
		cs.AllocatedResourcesStatus = nil
		for _, n := range order {
			if rs := byName[n]; len(rs.Resources) > 0 {
				cs.AllocatedResourcesStatus = append(cs.AllocatedResourcesStatus, *rs)
			}
		}
	}
}

// claimHealth is the health of the claim's prepared devices (those of
// request, when given), deduplicated by resource ID, drivers in name
// order; false when the claim is not in the cache.
func (m *Manager) claimHealth(now time.Time, namespace, name, request string) ([]corev1.ResourceHealth, bool) {
	m.cache.RLock()
	ci, ok := m.cache.get(name, namespace)
	if !ok {
		m.cache.RUnlock()
		return nil, false
	}
	c := ci.deepCopy()
	m.cache.RUnlock()
	base, _, _ := strings.Cut(request, "/")
	out := []corev1.ResourceHealth{}
	seen := map[corev1.ResourceID]bool{}
	for _, driver := range sortedKeys(c.DriverState) {
		for _, d := range c.DriverState[driver].Devices {
			if request != "" && len(d.RequestNames) > 0 && !slices.Contains(d.RequestNames, base) {
				continue
			}
			h, msg := m.health.get(now, driver, d.PoolName, d.DeviceName)
			rh := corev1.ResourceHealth{Health: h}
			if msg != "" {
				rh.Message = &msg
			}
			if len(d.CDIDeviceIDs) > 0 {
				rh.ResourceID = corev1.ResourceID(d.CDIDeviceIDs[0])
			} else {
				rh.ResourceID = corev1.ResourceID(fmt.Sprintf("%s/%s/%s", driver, d.PoolName, d.DeviceName))
			}
			if seen[rh.ResourceID] {
				continue
			}
			seen[rh.ResourceID] = true
			out = append(out, rh)
		}
	}
	return out, true
}
