// Package csi is the node side of kubelet v1.37.2's CSI volume plugin
// (pkg/volume/csi): a client of CSI drivers' node services, the registry
// of drivers the plugin watcher feeds, the volume operations a volume
// manager runs over them, kubelet's paths and vol_data.json files, and
// the CSINode and Node changes a registered driver implies, as pure
// functions. No client-go: the caller reads the API objects (PV,
// CSIDriver, VolumeAttachment, Secrets) and writes the CSINode and Node
// with its own client.
//
// # Registration
//
// Plugin has the plugin watcher handler's method set (ValidatePlugin,
// RegisterPlugin, DeRegisterPlugin). Versions are checked as kubelet: a
// non-empty list holding a v1.x version, higher than that of a driver
// already registered under the name; messages are kubelet's. RegisterPlugin
// calls NodeGetInfo (within the watcher's timeout, 2 minutes if none),
// refuses an empty node ID, and hands the answer to the NodeInfoWriter;
// any failure unregisters the driver. InstallDriverOnNode (the
// csi.volume.kubernetes.io/nodeid annotation, topology labels, kubelet's
// collision error), InstallDriverOnCSINode (the driver entry: node ID,
// sorted topology keys, allocatable count; the migrated-plugins
// annotation), NewCSINode and NodeOwnsCSINode give a writer kubelet's
// objects.
//
// # Operations and paths
//
// Stage (MountDevice), Unstage (UnmountDevice), Publish (SetUpAt),
// Unpublish (TearDownAt), VolumeStats and Expand make kubelet's calls in
// kubelet's order with kubelet's arguments: NodeGetCapabilities is asked
// before each decision that depends on it, as kubelet (which keeps no
// cache); the volume capability comes from the PV's first access mode
// (ReadWriteOnce if none, mapped to SINGLE_NODE_MULTI_WRITER/SINGLE_WRITER
// when the driver has SINGLE_NODE_MULTI_WRITER), fsType and mount options;
// the pod's fsGroup goes as volumeMountGroup only when the driver has
// VOLUME_MOUNT_GROUP; podInfoOnMount adds csi.storage.k8s.io/pod.name,
// pod.namespace, pod.uid, serviceAccount.name and ephemeral; tokenRequests
// add csi.storage.k8s.io/serviceAccount.tokens (to the secrets when
// serviceAccountTokenInSecrets); seLinuxMount adds the context mount option.
// Each operation is bounded by kubelet's 2-minute timeout (WithTimeout).
//
// Paths are kubelet's under its root directory (Layout):
//
//	staging  <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount
//	publish  <root>/pods/<podUID>/volumes/kubernetes.io~csi/<specName>/mount
//	block    <root>/plugins/kubernetes.io/csi/volumeDevices/{staging/<spec>, publish/<spec>/<podUID>, <spec>/data, <spec>/dev}
//
// with vol_data.json (kubelet's keys, byte for byte) beside the staging and
// publish directories and in a block volume's data directory, read back by
// ReadVolumeData at reconstruction. Every driver name, spec name and pod
// UID is validated before it becomes a path component (ErrInvalidName
// names the field); a volume handle reaches a path only through its hash.
//
// # Errors
//
// A driver's error keeps its gRPC code (status.Code works) and matches
// ErrUncertain when kubelet would treat the outcome as uncertain
// (Canceled, DeadlineExceeded, Unavailable, ResourceExhausted, Aborted, or
// no answer): the directory and vol_data.json are then kept, as kubelet's,
// so a retry or reconstruction finds them. A final error removes what
// the operation created. Secrets are never logged; secret and token
// values of 4 bytes or more that a driver echoes in an error are replaced
// by "[redacted]"; Secrets prints its keys only.
//
// # Differences from kubelet
//
//   - The caller fetches secrets, the CSIDriver, the VolumeAttachment's
//     attachment metadata and service-account tokens, and passes them in;
//     kubelet's plugin fetches them itself (and its error messages for
//     those fetches are the caller's to make).
//   - fsGroup ownership is not applied here: PublishResult.ApplyFSGroup says
//     when kubelet would apply it (driver without VOLUME_MOUNT_GROUP,
//     fsGroupPolicy, fsType, access modes, readOnly), and the caller does.
//     Likewise the SELinux relabel check after publish is the caller's.
//   - Kubelet writes the driver's values into the PV's volumeAttributes map
//     (mergeMap); podstart copies it first.
//   - A block volume's plugin directory is removed entry by entry (only
//     empty, unmounted directories), not recursively as kubelet's
//     RemoveAllOneFilesystem; its staging directory likewise (kubelet:
//     RemoveAll).
//   - NodeGetVolumeHealth, NodeGetStorageHealth and the CSINode allocatable
//     updater (MutableCSINodeAllocatableCount) are not implemented.
//   - Unstage checks that vol_data.json names the driver and handle asked
//     for (kubelet takes them from the file).
//   - Names are validated before they become paths: a driver that reports
//     a name the API server would refuse for a CSIDriver (not a DNS-1123
//     subdomain of at most 63 characters) is refused at ValidatePlugin, a
//     spec name that is not a DNS-1123 subdomain or a pod UID outside
//     [A-Za-z0-9_.-] is refused by the operation; kubelet uses them as
//     they come (escaping only "/" in spec names).
//   - Like kubelet, a filesystem volume of a driver without STAGE_UNSTAGE
//     leaves an empty globalmount directory (kubelet creates it before
//     checking the capability, and its UnmountDevice skips a directory
//     with no vol_data.json).
package csi
