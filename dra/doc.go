// Package dra is kubelet v1.37.2's DRA manager (pkg/kubelet/cm/dra):
// Dynamic Resource Allocation on the node, through the drivers' dra.v1
// kubelet plugin API (k8s.io/kubelet/pkg/apis/dra/v1, and v1beta1 as
// kubelet converts it).
//
// A Manager is the Handler of the "DRAPlugin" type for package
// pluginmanager: a driver registers its socket through the plugin
// registration directory, ValidatePlugin checks that it speaks a service
// kubelet speaks (v1.DRAPlugin, v1beta1.DRAPlugin) with kubelet's
// message, RegisterPlugin connects to it, DeRegisterPlugin closes the
// connection. A driver may have several sockets (rolling updates): calls
// go to the newest connected one, as kubelet's.
//
// For a pod, in kubelet's order:
//
//   - PrepareResources (podsync.WithResourcePreparer calls it right before
//     the sandbox is made): each of the pod's claims is resolved
//     (resourceClaimName, or the name generated from
//     resourceClaimTemplateName found in status.resourceClaimStatuses, and
//     the scheduler's claim for extended resources backed by DRA in
//     status.extendedResourceClaimStatus), read through the ClaimGetter,
//     checked (owned by the pod when made from a template, reserved for
//     the pod, allocated) with kubelet's errors, and its drivers found;
//     only then is the pod recorded in the claim-info cache (one entry per
//     claim, shared by the pods that use it) and the checkpoint written;
//     claims not yet prepared go to NodePrepareResources, one call per
//     driver for all of them, each call bounded by the driver's timeout
//     (DefaultCallTimeout, kubelet's 45s, unless the registration gives
//     one); the devices and CDI device IDs of the answers are recorded and
//     the checkpoint written again. Pods prepared at the same moment that
//     share a claim not yet prepared may each send it, as kubelet's do
//     (drivers answer idempotently).
//   - DeviceOptions (podsync.WithDevices) gives each container the CDI
//     device IDs of the claims it lists, as kubelet's GetResources.
//   - UpdateAllocatedResourcesStatus gives each container's status the
//     health of its claims' prepared devices (allocatedResourcesStatus,
//     "claim:<name>[/<request>]"), Unknown until their driver reports it
//     through its DRAResourceHealth stream (v1 or v1alpha1, watched from
//     registration on); WithHealthChange names the pods to update when a
//     device's health changes.
//   - GetDynamicResources (podresources.WithDynamicResources) gives the
//     pod-resources API a container's claims and devices, as kubelet's.
//   - UnprepareResources (podworker.WithResourceClaims calls it once the
//     pod's containers are stopped): claims no other pod uses go to
//     NodeUnprepareResources per driver, then leave the cache and the
//     checkpoint.
//
// The checkpoint is kubelet's file, CheckpointFile in the state directory
// (kubelet's root dir), byte for byte: EncodeCheckpoint and
// DecodeCheckpoint, checked against kubelet's code in test/diff. A new
// Manager reads it, so claims prepared before a restart are unprepared
// when their pods go, and running pods keep their CDI devices.
//
// # Differences from kubelet
//
//   - ResourceSlices are not published or wiped when a driver registers
//     or goes (kubelet deletes a driver's slices 30s after its last socket
//     went): the drivers publish their own; a node agent that must wipe
//     them does it through its API client.
//   - Device health (ResourceHealthStatus, beta and on in v1.37) is kept
//     in memory only: kubelet also writes it to <root-dir>/dra_health_state
//     and reads it back at start. After a restart devices read Unknown
//     until their driver's stream reports again (the test driver, as
//     kubeletplugin's, sends a full report when the stream opens). A
//     container's allocatedResourcesStatus entries keep the order they
//     had, new ones appended in the container's claim order (kubelet
//     rebuilds them from a map), and a health message cut to
//     ResourceHealthMessageMaxLength keeps whole UTF-8 characters (kubelet
//     cuts bytes).
//   - Claims whose allocation skips node operations
//     (DRAOptionalNodeOperations, alpha and off in v1.37) are refused with
//     kubelet's message; PodGroup claims (DRAWorkloadResourceClaims, off
//     by default) are not accepted as the pod's.
//   - CDI device IDs that drivers return are checked to be fully qualified
//     CDI names (vendor/class=name, the CDI project's parser): a driver
//     answering anything else fails the prepare (ErrDriver) instead of
//     reaching the runtime. A driver's strings are put into errors as
//     kubelet does unless they are long or hold unprintable characters;
//     then they are quoted and cut.
//   - Orders kubelet leaves to map iteration are fixed: drivers are called
//     in name order, the checkpoint lists claims by namespace and name, a
//     container's CDI devices come in the pod's claim order and, within a
//     claim, driver name order.
//   - The checkpoint is read with a cap (64 MiB) and only if it is a
//     regular file; a checkpoint of another kind or apiVersion, with a
//     claim listed twice or without a name, namespace or UID, is refused
//     as corrupt (kubelet reads the first as empty and keeps the last of
//     duplicates).
//   - A ResourceClaim that two of a pod's claims name is sent to the
//     driver once (kubelet sends it twice in one request and then fails
//     the prepare, counting one answer missing).
//   - Kubelet's reconcile loop, which unprepares the claims of pods that
//     are gone every 60s once its sources are ready, is Reconcile: the
//     node agent calls it with its set of active pods.
//   - No metrics.
package dra
