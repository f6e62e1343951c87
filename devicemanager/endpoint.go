package devicemanager

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// endpoint is one connected plugin (kubelet's endpointImpl); an endpoint
// restored from the checkpoint has no connection and is stopped.
type endpoint struct {
	resource, socket string
	conn             *grpc.ClientConn
	client           pluginapi.DevicePluginClient
	opts             *pluginapi.DevicePluginOptions
	stopTime         time.Time // guarded by Manager.mu
}

// MaxDeviceIDLength caps a device ID a plugin reports.
const MaxDeviceIDLength = 1024

// connect is kubelet's connectClient and PluginConnected: dial, read the
// options, record the endpoint and start its ListAndWatch stream.
func (m *Manager) connect(ctx context.Context, resourceName, socket string) error {
	conn, err := grpc.NewClient("passthrough:///"+socket,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}),
	)
	if err != nil {
		return fmt.Errorf("failed to dial device plugin: %v", err)
	}
	client := pluginapi.NewDevicePluginClient(conn)
	// Kubelet dials blocking for up to 10 s, then asks for the options
	// under the Register call's context.
	dctx, cancel := context.WithTimeout(ctx, m.o.dialTimeout)
	defer cancel()
	conn.Connect()
	if err := waitReady(dctx, conn); err != nil {
		conn.Close()
		return fmt.Errorf("failed to dial device plugin: %v", err)
	}
	opts, err := client.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		conn.Close()
		return fmt.Errorf("failed to get device plugin options: %v", err)
	}
	e := &endpoint{resource: resourceName, socket: socket, conn: conn, client: client, opts: opts}
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		conn.Close()
		return fmt.Errorf("device manager is stopped")
	}
	if m.store[resourceName] == nil {
		m.store[resourceName] = map[string]*endpoint{}
	}
	if _, ok := m.store[resourceName][socket]; ok {
		m.mu.Unlock()
		conn.Close()
		return fmt.Errorf("device plugin already connected: %s", socket)
	}
	m.endpoints[resourceName] = e
	m.store[resourceName][socket] = e
	m.wg.Add(1)
	m.mu.Unlock()
	m.log.V(2).Info("Device plugin connected", "resourceName", resourceName)
	go m.run(e)
	m.changed(resourceName)
	return nil
}

// waitReady waits for conn to be ready (kubelet's grpc.WithBlock).
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	for {
		s := conn.GetState()
		if s.String() == "READY" {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}

// run is kubelet's client.Run and runClient: read ListAndWatch until it
// ends, then disconnect.
func (m *Manager) run(e *endpoint) {
	defer m.wg.Done()
	log := m.log.WithValues("resource", e.resource)
	stream, err := e.client.ListAndWatch(m.ctx, &pluginapi.Empty{})
	if err == nil {
		for {
			resp, rerr := stream.Recv()
			if rerr != nil {
				err = rerr
				break
			}
			m.updateDevices(e, resp.Devices)
		}
	}
	log.Error(err, "ListAndWatch ended unexpectedly for device plugin")
	m.disconnect(e)
}

// disconnect is kubelet's Disconnect and PluginDisconnected: the
// endpoint's stop time starts its grace period; when it was the
// resource's last, the resource's devices turn unhealthy.
func (m *Manager) disconnect(e *endpoint) {
	e.conn.Close()
	m.mu.Lock()
	eps := m.store[e.resource]
	if eps == nil || eps[e.socket] != e {
		m.mu.Unlock()
		return
	}
	e.stopTime = m.o.clock.Now()
	if len(eps) == 1 {
		delete(m.store, e.resource)
		m.markUnhealthy(e.resource)
	} else {
		delete(eps, e.socket)
		m.endpoints[e.resource] = eps[sortedKeys(eps)[0]]
	}
	m.mu.Unlock()
	m.log.V(2).Info("Device plugin disconnected", "resource", e.resource)
	m.changed(e.resource)
}

// markUnhealthy is kubelet's markResourceUnhealthy; m.mu is held.
func (m *Manager) markUnhealthy(res string) {
	h := m.healthy[res]
	m.healthy[res] = set{}
	m.unhealthy[res] = m.unhealthy[res].union(h)
}

// validDeviceID: kubelet takes any ID; podstart leaves out IDs that are
// empty, longer than MaxDeviceIDLength or hold control characters (they
// would reach logs, checkpoints and the pod-resources API).
func validDeviceID(id string) bool {
	if id == "" || len(id) > MaxDeviceIDLength {
		return false
	}
	return !strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar })
}

// updateDevices is kubelet's genericDeviceUpdateCallback: the plugin's
// list replaces the resource's devices.
func (m *Manager) updateDevices(e *endpoint, devices []*pluginapi.Device) {
	m.mu.Lock()
	if eps := m.store[e.resource]; eps == nil || eps[e.socket] != e {
		m.mu.Unlock()
		return
	}
	res := e.resource
	healthy, unhealthy := set{}, set{}
	all := make(map[string]*pluginapi.Device, len(devices))
	bad := 0
	for _, d := range devices {
		if d == nil || !validDeviceID(d.ID) {
			bad++
			continue
		}
		all[d.ID] = d
		if d.Health == pluginapi.Healthy {
			healthy[d.ID] = struct{}{}
		} else {
			unhealthy[d.ID] = struct{}{}
		}
	}
	m.all[res], m.healthy[res], m.unhealthy[res] = all, healthy, unhealthy
	m.mu.Unlock()
	if bad > 0 {
		m.log.Error(fmt.Errorf("%w: %d device(s) with an empty, overlong or unprintable ID left out", ErrBadResponse, bad), "Bad ListAndWatch response", "resource", res)
	}
	if err := m.writeCheckpoint(); err != nil {
		m.log.Error(err, "Writing checkpoint encountered")
	}
	m.log.V(2).Info("Processed device updates for resource", "resourceName", res, "totalCount", len(devices), "healthyCount", len(healthy))
	m.changed(res)
}

func (m *Manager) gracePeriodExpired(e *endpoint) bool {
	return !e.stopTime.IsZero() && m.o.clock.Since(e.stopTime) > EndpointStopGracePeriod
}

// Capacity is kubelet's GetCapacity (containerManager's
// GetDevicePluginResourceCapacity): per resource, capacity counts all its
// devices and allocatable its healthy ones; deleted are the resources
// whose plugin has been gone longer than EndpointStopGracePeriod, which
// Capacity forgets (nodestatus sets their capacity to 0, as kubelet's
// MachineInfo setter does).
func (m *Manager) Capacity() (capacity, allocatable corev1.ResourceList, deleted []string) {
	capacity, allocatable = corev1.ResourceList{}, corev1.ResourceList{}
	gone := map[string]bool{}
	m.mu.Lock()
	for res, devs := range m.healthy {
		if e, ok := m.endpoints[res]; !ok || m.gracePeriodExpired(e) {
			gone[res] = true
			continue
		}
		capacity[corev1.ResourceName(res)] = *resource.NewQuantity(int64(len(devs)), resource.DecimalSI)
		allocatable[corev1.ResourceName(res)] = *resource.NewQuantity(int64(len(devs)), resource.DecimalSI)
	}
	for res, devs := range m.unhealthy {
		if e, ok := m.endpoints[res]; !ok || m.gracePeriodExpired(e) {
			gone[res] = true
			continue
		}
		c := capacity[corev1.ResourceName(res)]
		c.Add(*resource.NewQuantity(int64(len(devs)), resource.DecimalSI))
		capacity[corev1.ResourceName(res)] = c
	}
	for res := range gone {
		delete(m.endpoints, res)
		delete(m.healthy, res)
		delete(m.unhealthy, res)
	}
	m.mu.Unlock()
	if len(gone) > 0 {
		if err := m.writeCheckpoint(); err != nil {
			m.log.Error(err, "Failed to write checkpoint file")
		}
	}
	return capacity, allocatable, sortedKeys(gone)
}
