package devicemanager

import (
	"context"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/podstart/podstart/criconfig"
)

func resourceQuantity(n int) *resource.Quantity {
	return resource.NewQuantity(int64(n), resource.DecimalSI)
}

// DeviceOptions is kubelet's GetDeviceRunContainerOptions, and implements
// podsync.Devices: for each device resource of the container's limits,
// PreStartContainer when the plugin asks for it (bounded by
// PreStartContainerTimeout); a container with no devices recorded for
// such a resource (its pod admitted before the plugin registered, or
// allocations lost with a corrupt checkpoint) is allocated now; then the
// plugins' answers are merged as kubelet's deviceRunContainerOptions
// merges them: per resource in order of name, the first environment
// variable, device (by container path), mount (by container path) and
// annotation of a name wins and a conflicting later one is logged and
// dropped; CDI devices are de-duplicated.
func (m *Manager) DeviceOptions(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
	uid := string(pod.UID)
	realloc := false
	for _, name := range sortedKeys(c.Resources.Limits) {
		q := c.Resources.Limits[corev1.ResourceName(name)]
		if !m.isDevicePluginResource(name) || q.Value() == 0 {
			continue
		}
		if err := m.preStart(ctx, uid, c.Name, name); err != nil {
			return criconfig.DeviceOptions{}, err
		}
		if !m.podActive(pod) {
			continue
		}
		m.mu.Lock()
		missing := m.pods.containerDevices(uid, c.Name, name) == nil
		m.mu.Unlock()
		if missing {
			realloc = true
		}
	}
	if realloc {
		var active []*corev1.Pod
		if m.o.activePods != nil {
			active = m.o.activePods()
		}
		if err := m.allocate(ctx, pod, c, active, m.o.activePods != nil); err != nil {
			return criconfig.DeviceOptions{}, err
		}
	}
	return m.merged(ctx, uid, c.Name), nil
}

func (m *Manager) podActive(pod *corev1.Pod) bool {
	if m.o.activePods == nil {
		return true
	}
	for _, p := range m.o.activePods() {
		if p != nil && p.UID == pod.UID {
			return true
		}
	}
	return false
}

// preStart is kubelet's callPreStartContainerIfNeeded.
func (m *Manager) preStart(ctx context.Context, uid, cont, res string) error {
	m.mu.Lock()
	e, ok := m.endpoints[res]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("endpoint not found in cache for a registered resource: %s", res)
	}
	if e.opts == nil || !e.opts.PreStartRequired {
		m.mu.Unlock()
		return nil
	}
	devs := m.pods.containerDevices(uid, cont, res)
	stopped := !e.stopTime.IsZero()
	m.mu.Unlock()
	if devs == nil {
		return fmt.Errorf("no devices found allocated in local cache for pod %s, container %s, resource %s", uid, cont, res)
	}
	var err error
	if stopped || e.client == nil {
		err = fmt.Errorf("endpoint %s has been stopped", res)
	} else {
		pctx, cancel := context.WithTimeout(ctx, m.o.preStartTimeout)
		_, err = e.client.PreStartContainer(pctx, &pluginapi.PreStartContainerRequest{DevicesIds: devs.sorted()})
		cancel()
	}
	if err != nil {
		return fmt.Errorf("device plugin PreStartContainer rpc failed with err: %v", err)
	}
	return nil
}

// merged is kubelet's podDevices.deviceRunContainerOptions.
func (m *Manager) merged(ctx context.Context, uid, cont string) criconfig.DeviceOptions {
	_ = ctx
	m.mu.Lock()
	defer m.mu.Unlock()
	var out criconfig.DeviceOptions
	ress, ok := m.pods[uid][cont]
	if !ok {
		return out
	}
	envs, devs, mnts, anns, cdi := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}, map[string]bool{}
	for _, res := range sortedKeys(ress) {
		r := ress[res].resp
		if r == nil {
			continue
		}
		for _, k := range sortedKeys(r.Envs) {
			v := r.Envs[k]
			if e, ok := envs[k]; ok {
				if e != v {
					m.log.Error(nil, "Environment variable has conflicting setting", "envKey", k, "expected", v, "got", e)
				}
				continue
			}
			envs[k] = v
			out.Env = append(out.Env, criconfig.EnvVar{Name: k, Value: v})
		}
		for _, d := range r.Devices {
			if d == nil {
				continue
			}
			if h, ok := devs[d.ContainerPath]; ok {
				if h != d.HostPath {
					m.log.Error(nil, "Container device has conflicting mapping host devices", "containerPath", d.ContainerPath, "got", h, "expected", d.HostPath)
				}
				continue
			}
			devs[d.ContainerPath] = d.HostPath
			out.Devices = append(out.Devices, &runtimeapi.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
		}
		for _, mt := range r.Mounts {
			if mt == nil {
				continue
			}
			if h, ok := mnts[mt.ContainerPath]; ok {
				if h != mt.HostPath {
					m.log.Error(nil, "Container mount has conflicting mapping host mounts", "containerPath", mt.ContainerPath, "conflictingPath", h, "hostPath", mt.HostPath)
				}
				continue
			}
			mnts[mt.ContainerPath] = mt.HostPath
			out.Mounts = append(out.Mounts, &runtimeapi.Mount{ContainerPath: mt.ContainerPath, HostPath: mt.HostPath, Readonly: mt.ReadOnly})
		}
		for _, k := range sortedKeys(r.Annotations) {
			v := r.Annotations[k]
			if e, ok := anns[k]; ok {
				if e != v {
					m.log.Error(nil, "Annotation has conflicting setting", "annotationKey", k, "expected", e, "got", v)
				}
				continue
			}
			anns[k] = v
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
		for _, d := range r.CdiDevices {
			if d == nil || cdi[d.Name] {
				continue
			}
			cdi[d.Name] = true
			out.CDIDevices = append(out.CDIDevices, d.Name)
		}
	}
	return out
}

// validateResponse refuses an Allocate answer the runtime could not use
// safely (kubelet passes it on): CDI names not fully qualified
// (vendor/class=name, the CDI parser's rules), device and mount paths not
// absolute or holding NUL, environment names empty or holding '=' or NUL.
func validateResponse(r *pluginapi.ContainerAllocateResponse) error {
	for k, v := range r.Envs {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: environment variable %q", ErrBadResponse, k)
		}
	}
	for _, d := range r.Devices {
		if d == nil || !absPath(d.ContainerPath) || !absPath(d.HostPath) {
			return fmt.Errorf("%w: device %v", ErrBadResponse, d)
		}
		for _, p := range d.Permissions {
			if !strings.ContainsRune("rwm", p) {
				return fmt.Errorf("%w: device %q permissions %q", ErrBadResponse, d.ContainerPath, d.Permissions)
			}
		}
	}
	for _, mt := range r.Mounts {
		if mt == nil || !absPath(mt.ContainerPath) || !absPath(mt.HostPath) {
			return fmt.Errorf("%w: mount %v", ErrBadResponse, mt)
		}
	}
	for k, v := range r.Annotations {
		if k == "" || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: annotation %q", ErrBadResponse, k)
		}
	}
	for _, d := range r.CdiDevices {
		if d == nil {
			return fmt.Errorf("%w: empty CDI device", ErrBadResponse)
		}
		if err := ValidateCDIName(d.Name); err != nil {
			return err
		}
	}
	return nil
}

func absPath(p string) bool {
	return p != "" && path.IsAbs(p) && !strings.ContainsRune(p, 0)
}
