// Package nodestatus is kubelet's Node object and node heartbeat for a
// node agent: the Node as kubelet registers it, its status as kubelet's
// setters compute it, and the Lease and status updates that keep it alive,
// with no client-go (callers adapt their API client to Client).
//
// # The Node
//
// InitialNode is kubelet's initialNode (kubernetes.io/hostname, the stable
// and beta os and arch labels, --register-with-taints, the external cloud
// provider's uninitialized taint, the controller-managed attach/detach
// annotation, --node-labels, --provider-id). Reconcile is what kubelet does
// to a node that already exists. The setters are those of kubelet's
// pkg/kubelet/nodestatus, in kubelet's order (DefaultSetters):
// NodeAddress, MachineInfo (capacity and allocatable, pods 110 by default),
// VersionInfo, DaemonEndpoints, Images, GoRuntime, then the memory, disk
// and PID pressure conditions and Ready last, with kubelet's reasons,
// messages, events and transition and heartbeat times, as kubelet v1.37.2
// (MachineInfo also reports nodeInfo.runningInUserNamespace, read as
// kubelet reads it: RunningInUserNamespace). The node's events are on
// kubelet v1.37.2's reference (EventRef): v1 Node by name, with the Node's
// UID once a status update has seen the Node. RuntimeState turns
// CRI Status into Ready's errors as kubelet's runtimeState and
// updateRuntimeUp do ("container runtime network not ready: ...",
// "container runtime is down" after 30 s without a status).
//
// # The heartbeat
//
// Heartbeat.Register makes one registration attempt (create, else
// reconcile and patch). Heartbeat.Run renews the Lease in kube-node-lease
// (40 s, renewed every 10 s, holder the node's name, owned by the Node),
// computes the status every 10 s and patches it (kubelet's strategic merge
// patch of the status subresource) when it changed or 5 min (±50% after a
// change) passed, retrying 5 times, and asks the runtime for its status
// every 5 s. Everything runs on the injected clock.
//
// # Differences from kubelet
//
//   - One goroutine runs the lease, status and runtime loops (kubelet runs
//     three, and a separate heartbeat client): a slow API call delays the
//     others. Failed lease creation is retried on the same back-off
//     (200 ms doubling to 7 s) without blocking the status loop.
//   - kubelet's fast status update polls every 100 ms until the node is
//     Ready; here the status is synced after every runtime check (5 s)
//     while the reported node is not Ready.
//   - A lease update conflict reads the lease once; kubelet retries the
//     read with back-off until it succeeds.
//   - Device plugins' capacities come from MachineConfig.DevicePlugins
//     (devicemanager.Manager.Capacity).
//   - Not provided: RuntimeHandlers and Features (feature
//     gated in kubelet), pod CIDR, the Windows build label, the cloud
//     provider's own address discovery, and the registration's zeroing of
//     extended resources after a device manager reset
//     (devicemanager.Manager.ShouldResetExtendedResourceCapacity tells
//     when kubelet would).
//   - The machine (MachineFromHost) is read from /proc and /sys directly,
//     not from cAdvisor: CPUs from /proc/cpuinfo, ephemeral storage is the
//     size of the filesystem holding the root directory.
package nodestatus
