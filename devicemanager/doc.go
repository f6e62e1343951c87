// Package devicemanager is kubelet v1.37.2's device manager: the device
// plugin API v1beta1 (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), with
// which GPU, NIC and FPGA vendors' plugins offer a node's devices as
// extended resources (nvidia.com/gpu), and the allocation of those devices
// to containers.
//
// A Manager (New, then Start) serves the Registration service on
// <dir>/kubelet.sock (DefaultDir: /var/lib/kubelet/device-plugins; Start
// first removes stale sockets from dir, as kubelet does). A plugin's
// Register is checked as kubelet checks it: the API version
// ("requested API version %q is not supported by kubelet. Supported
// version is %q") and the resource name, an extended resource name ("the
// ResourceName %q is invalid"); then the Manager dials the plugin's socket
// in dir (DialTimeout), reads its options and reads its ListAndWatch
// stream: each list replaces the resource's devices, healthy or not.
//
// Capacity is kubelet's GetCapacity: per resource, capacity counts every
// device and allocatable the healthy ones. When a plugin's stream ends
// (the plugin died or went away), its endpoint stops; when it was its
// resource's last, every device of the resource turns unhealthy and stays
// in capacity for EndpointStopGracePeriod (5 min, on the injectable
// clock); after that Capacity deletes the resource and returns it among
// the deleted ones (nodestatus.MachineConfig.DevicePlugins then keeps it
// in the Node at 0, as kubelet does). A plugin registering again (a new
// socket, or the same after its old stream ended) replaces the endpoint.
//
// Admit (an admission.Handler for admission.Config.Resources, where
// kubelet's topology manager calls the device manager) allocates each
// init container's, then each container's devices: for each
// extended-resource limit a plugin serves, the container's devices are
// taken first from those of the pod's init containers before it
// (kubelet's devicesToReuse; a sidecar's are its own), then from the
// plugin's preferred ones (GetPreferredAllocation, when its options offer
// it), then from the free healthy ones; the plugin's Allocate is called
// for the container and its answer kept. Before allocating, the devices of
// pods no longer active are freed (UpdateAllocatedDevices; the active pods
// are the admitted ones Admit is given, and the pod). A failure refuses
// the pod with kubelet's reason UnexpectedAdmissionError and message
// "Allocate failed due to <error>, which is unexpected", e.g.
// "requested number of devices unavailable for example.com/dongle.
// Requested: 2, Available: 1". UpdatePluginResources is kubelet's
// adjustment of the node the predicates see (admission.Config).
//
// DeviceOptions (podsync.WithDevices) gives the container's devices,
// mounts, environment, annotations and CDI devices from the plugins'
// Allocate answers, merged as kubelet merges them; it calls the plugin's
// PreStartContainer first when its options ask (PreStartContainerTimeout),
// as kubelet does when it creates the container.
//
// Allocations are written to <dir>/kubelet_internal_checkpoint in
// kubelet's format and checksum (package checkpoint) after each
// allocation, each device list and each deleted resource; Start reads it,
// so an agent restarted with running device pods keeps their devices and
// never gives them to another pod. Its resources come back with a stopped
// endpoint: deleted after the grace period unless their plugin registers
// again. A checkpoint that cannot be read (corrupt, or a checksum that does
// not match) is logged and ignored, as kubelet ignores it; an entry whose
// Allocate answer would be refused from a plugin is dropped.
//
// WatcherHandler is kubelet's handler for device plugins that register
// through the plugin watcher (pluginmanager, type "DevicePlugin") instead
// of kubelet.sock.
//
// GetDevices and GetAllocatableDevices serve the pod-resources API
// (podresources.WithDevices).
//
// # Differences from kubelet
//
//   - No topology manager: kubelet's default policy ("none") gives no NUMA
//     hints, so every free device is a candidate, as here; topology hints
//     (GetTopologyHints) and the other policies are not implemented.
//   - Devices, resources and plugin answers are taken in order of their
//     names where kubelet takes them in Go map order (which device of
//     several free ones a container gets; which of two resources' answers
//     wins a conflict when merging). The checkpoint lists entries sorted.
//   - Register refuses an endpoint that is not a plain file name in dir
//     (kubelet joins any endpoint to its directory).
//   - Device IDs that are empty, longer than MaxDeviceIDLength or hold
//     control characters are left out of a plugin's list (and logged):
//     they would reach logs, the checkpoint and the pod-resources API.
//   - An Allocate answer is checked before it is kept (kubelet passes it
//     on for the runtime to fail): CDI names must be fully qualified
//     (ValidateCDIName), device and mount paths absolute without NUL,
//     device permissions within "rwm", environment names without '=' or
//     NUL. A refused answer, and an answer with no container responses,
//     frees the devices again (kubelet keeps the latter's devices
//     allocated until its next free).
//   - Allocate and GetPreferredAllocation are bounded by the caller's
//     context only, as kubelet's; a caller that must bound admission sets
//     a deadline on it.
//   - Kubelet skips allocation for a container its runtime already runs
//     while its pod sources are not ready (a restart with no checkpoint);
//     the Manager does not know the runtime: with a checkpoint the
//     container's devices are kept, without one they are allocated anew.
//   - Kubelet writes a DEPRECATION file into the device-plugins
//     directory when it registers its plugin watcher handler; the
//     WatcherHandler does not.
//   - The device health of allocated devices in container statuses
//     (allocatedResourcesStatus; ResourceHealthStatus, beta and on in
//     v1.37) is not reported for device plugins' devices (package dra
//     reports it for DRA's).
package devicemanager
