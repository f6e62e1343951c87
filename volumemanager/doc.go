// Package volumemanager is kubelet's volume manager
// (pkg/kubelet/volumemanager in k8s.io/kubernetes v1.37.2) for the volumes
// that need a storage system: persistentVolumeClaim volumes bound to CSI
// persistent volumes, generic ephemeral volumes and CSI inline volumes.
// The in-tree volumes (emptyDir, hostPath, Secret, ConfigMap, downward
// API, projected) stay with apiobjects and podsync.DefaultVolumes;
// Manages says which volumes are this package's.
//
// A Manager keeps kubelet's two caches and runs its reconciler over them:
//
//   - The desired state (AddPod, RemovePod): for each pod, the volumes a
//     container uses (volumes no container mounts are skipped, as kubelet
//     does), each resolved as kubelet's populator resolves it. A claim
//     must be Bound ("PVC is not bound", also for a Lost claim), name its
//     volume ("PVC has empty pvc.Spec.VolumeName") and not be deleted
//     without the pvc-protection finalizer ("PVC is being deleted"); the
//     PV must point back at the claim's UID ("found PV object %s but its
//     pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", or "... it
//     has a nil pv.Spec.ClaimRef ..."); all wrapped as "error processing
//     PVC <ns>/<claim>: ...". A generic ephemeral volume uses the claim
//     <pod>-<volume>, which the pod must control ("PVC %s/%s was not
//     created for pod %s/%s (pod is not owner)"). Volumes are named as
//     kubelet names them: UniqueVolumeName ("kubernetes.io/csi/<driver>^<handle>",
//     shared by every pod using the PV) and InlineVolumeName
//     ("kubernetes.io/csi/<pod UID>-<volume>", one pod's).
//   - The actual state: which volumes are attached, staged (once per
//     volume, at StagingPath) and published (once per pod, at TargetPath).
//     The directories and kubelet's vol_data.json beside the target and
//     the staging directory are the NodeVolumes' (kubelet's CSI plugin,
//     package csi, through CSI); the manager only reads them back.
//   - The reconciler (Reconcile, Run): unpublish what no pod wants (once
//     SourcesReady), then for each wanted pod volume: for a driver whose
//     CSIDriver does not say attachRequired: false, wait until the
//     node's volumesInUse reports the volume (MarkVolumesReportedInUse)
//     and its VolumeAttachment (AttachmentName) says attached, whose
//     attachmentMetadata becomes the publish context; stage it unless
//     staged (drivers with STAGE_UNSTAGE_VOLUME); publish it for the pod;
//     then unstage the volumes no pod uses (once SourcesReady). A failure
//     is a FailedMount event with kubelet's words (`MountVolume.MountDevice
//     failed for volume "<pv>" : <cause>`, `MountVolume.SetUp failed ...`,
//     `MountVolume.WaitForAttach failed ...`) and is retried after
//     kubelet's exponential back-off.
//   - Reconstruction (the first Reconcile): what an earlier agent left on
//     the disk is taken back into the actual state as "maybe published"
//     and "maybe staged", so that a restarted agent publishes nothing at a
//     second place and leaks nothing: wanted volumes are published again
//     at the same target (CSI publish is idempotent), unwanted ones are
//     unpublished and unstaged once the sources are ready.
//
// Block volumes (a claim whose PV has volumeMode: Block, used in a
// container's volumeDevices; kubelet's MapVolume, UnmapVolume and
// UnmapDevice with csi_block.go): staged once at
// <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv> and
// published per pod at .../volumeDevices/publish/<pv>/<pod UID> (block
// access, no fsType, mount options or fsGroup; the CSI plugin keeps
// vol_data.json in .../volumeDevices/<pv>/data), then mapped as kubelet's
// MapBlockVolume through a BlockPathHandler (HostBlockPaths): the
// published device, its symlinks resolved, bind-mounted at
// .../volumeDevices/<pv>/dev/<pod UID>, a symlink to it at
// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>, and a loop device
// on the bind mount (AttachFileDevice) that holds the device open. The
// pod's containers get the symlink as a CRI Device (DeviceOptions, a
// podsync.Devices: devicePath in the container, permissions "mrw", "r" for
// a read-only claim). When the pod goes: the loop device detached, the
// symlink removed, the bind mount unmounted, NodeUnpublishVolume; when no
// pod maps it, NodeUnstageVolume (refused while a pod's bind mount is
// left) and the volume's directories removed. A volume in volumeDevices
// whose mode is not Block, or in volumeMounts whose mode is Block, is
// kubelet's pod error ("volume %s has volumeMode %s, but is specified in
// volumeDevices").
//
// Volume expansion (kubelet's ExpandInUseVolume and
// expandVolumeDuringMount, RecoverVolumeExpansionFailure on as in v1.37):
// a pod mounting a PV read-write makes the PV's capacity the volume's
// desired size; the size it is known to have is the claim's
// status.capacity when it was mounted, then what expansion reached. When
// a pass finds the desired size above the known one (the PV grown by the
// resizer; AddPod, which a pod sync calls, reads the new PV), it reads
// the claim and, as kubelet: with a resizer that fills
// allocatedResources, calls NodeExpandVolume (the publish target, the
// staging path, the allocated size) only when the claim's
// allocatedResourceStatuses says NodeResizePending or
// NodeResizeInProgress (or for an already grown ReadWriteMany claim),
// patching the claim's status to NodeResizeInProgress first and, after,
// its capacity with the status cleared (strategic merge patches with the
// resourceVersion, through the API's ClaimStatusPatcher); a failure marks
// the claim NodeResizeInfeasible (InvalidArgument, OutOfRange, NotFound)
// or adds the NodeResizeError condition; FailedPrecondition stops
// expansion of the volume while it stays mounted. With an older resizer
// it expands to the PV's capacity and writes the claim's capacity.
// Events: FileSystemResizeSuccessful on the pod and the claim,
// VolumeResizeFailed on the pod, FileSystemResizeFailed for a read-only
// volume. After each publish of a PV volume the claim is read, and a
// status capacity below the PV's is expanded at once ("MountVolume.Setup
// failed while expanding volume" leaves the pod volume unusable and
// retried). Needs a NodeVolumes with VolumeExpander (CSI(plugin) has it).
//
// Volume stats: the Manager is a stats.VolumeSource (VolumePods,
// MountedVolumes: the volumes published for a pod, each measured with
// NodeGetVolumeStats at its publish target, a block volume at the pod's
// bind mount in the global map path, through the NodeVolumes'
// VolumeStats, kubelet's metricsCsi); a stats.VolumeAnalyzer over it
// caches them for /stats/summary and eviction.
//
// WaitForAttachAndMount is what a pod worker calls before SyncPod, with
// kubelet's timeout (PodAttachAndMountTimeout, 2m3s) and message
// ("unmounted volumes=[...], unattached volumes=[...], failed to process
// volumes=[...]: context deadline exceeded" in v1.37.2, which waits with
// wait.PollUntilContextTimeout); WaitForUnmount after the pod's containers
// are gone; Volumes gives podsync the published volumes
// (mounts.VolumeMap), and Provider serves them beside an in-tree provider
// as a podsync.VolumeProvider; VolumesInUse is node.status.volumesInUse,
// and MarkVolumesReportedInUse must be told what the Node's status
// reported, since an attachable volume is mounted only once reported (as
// kubelet's VerifyControllerAttachedVolume requires).
//
// The driver is reached through NodeVolumes (CSI(plugin): a csi.Plugin
// whose drivers registered through the plugin watcher, pluginmanager);
// the API objects through one-method getters (API; Objects holds
// them in memory). Names that become paths are checked first: the pod
// (validation.Check, its UID among them), PV names (DNS subdomains),
// driver names (CheckDriverName); volume handles are only ever hashed
// into paths. Secrets go to the driver and nowhere else.
//
// # Refused by name (ErrUnsupported)
//
// PVs that are not CSI (in-tree plugins
// and their CSI migration); CSIDrivers with tokenRequests,
// requiresRepublish or nodeAllocatableUpdatePeriodSeconds; a CSIDriver with seLinuxMount: true for a pod that
// sets seLinuxOptions (kubelet would pass a context= mount option).
//
// # Differences from kubelet
//
//   - Operations run one after another inside a pass, not in goroutines
//     per volume: a slow driver call delays the others' in that pass.
//   - The attach wait reads node.status.volumesAttached only through an
//     API that is a NodeGetter (Objects.WithNodes, the agent's Node
//     informer); without one, the VolumeAttachment alone says attached.
//     Kubelet checks its Node informer's cache first and then reads the
//     Node live; the manager reads the getter once per attempt.
//   - The attach limit: the CSINode's allocatable count (NodeGetInfo's
//     max_volumes_per_node, written by package csi) is what the
//     scheduler counts, as with kubelet. Kubelet v1.37's mutable count
//     (a CSIDriver's nodeAllocatableUpdatePeriodSeconds: a periodic
//     NodeGetInfo and the VolumeAttachmentLimitExceeded rejection of a pod
//     whose attachment failed with ResourceExhausted) is refused by name.
//   - A failed NodePublishVolume keeps the pod volume as "maybe published"
//     (unpublished if abandoned), whatever the error; kubelet forgets it
//     when the gRPC error is final (both remove the directory then).
//   - Over CSI(plugin) the driver gets kubelet's calls and no more (csi
//     asks its capabilities before each, as kubelet); the NodeStageSecretRef
//     secret is fetched before the plugin learns whether the driver
//     stages (kubelet fetches it only for a driver that stages). Over a
//     NodeVolumes that reports capabilities instead, Stage is called only
//     for drivers with STAGE_UNSTAGE_VOLUME, so a driver without it gets
//     no staging directory (kubelet makes an empty one and leaves it).
//   - Reconstruction also scans the staging directories, so a volume
//     staged by an agent killed before publishing is unstaged when no pod
//     wants it (kubelet leaks it); reconstructed volumes are attachable
//     unless their CSIDriver says otherwise (kubelet asks
//     node.status.volumesAttached).
//   - A CSIDriver read through a getter that does not default it: an
//     empty volumeLifecycleModes counts as the API server's default
//     (Persistent); a missing fsGroupPolicy fails the publish with
//     kubelet's message, as kubelet would.
//   - Volumes gives SELinuxRelabel true for every published volume (kubelet
//     asks whether the mount supports SELinux); volume health and the extra
//     supplemental groups of the pv.beta.kubernetes.io/gid annotation are
//     not done.
//   - The size a mounted volume is known to have comes from the claim read
//     when the pod was last resolved; kubelet reads the claim again when
//     it verifies the attachment. Expansions run in the pass, one after
//     another, after the pass's mounts.
//   - Block volumes: reconstruction also reads the plugin's volumeDevices
//     directories (the publish and global map entries), not only the
//     pods' symlinks, so a map cut short by a restart is undone; a
//     global map directory is removed entry by entry (kubelet:
//     RemoveAll); UnmapDevice does not check that the device is no
//     longer open (kubelet's isDeviceOpened); the pod's emptied
//     volumeDevices directories are removed at unmap (kubelet leaves them
//     to the pod's cleanup); a block volume is not expanded on the node
//     (kubelet calls NodeExpandVolume for it as well); the
//     ReadWriteOncePod check of MapVolume is not made.
//   - The wait ends as soon as the state changes instead of polling every
//     300 ms; WaitForAttachAndMount adds the pod itself (kubelet's pod
//     manager feeds its populator).
package volumemanager
