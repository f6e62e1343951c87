package volumemanager

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The API objects the manager reads, each through a one-method getter. A
// missing object is an error for which apierrors.IsNotFound is true (what
// a lister or a client-go client returns). Objects implements all five in
// memory.
type (
	// ClaimGetter gets a PersistentVolumeClaim by namespace and name.
	ClaimGetter interface {
		GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	}
	// VolumeGetter gets a PersistentVolume by name.
	VolumeGetter interface {
		GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
	}
	// AttachmentGetter gets a VolumeAttachment by name.
	AttachmentGetter interface {
		GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error)
	}
	// DriverGetter gets a CSIDriver by name.
	DriverGetter interface {
		GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
	}
	// SecretGetter gets a Secret by namespace and name (the stage and
	// publish secrets a PV or an inline volume refers to). Their content
	// goes to the driver only, never into an error, event or log.
	SecretGetter interface {
		GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	}
)

// NodeGetter is an optional ability of the API: the manager's Node, whose
// status.volumesAttached must list an attachable volume before it is
// mounted (kubelet's VerifyControllerAttachedVolume). Kubelet reads it
// from an informer first and then live; a getter backed by an informer of
// the one Node is enough.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// API is every getter the manager uses.
type API interface {
	ClaimGetter
	VolumeGetter
	AttachmentGetter
	DriverGetter
	SecretGetter
}

// NodeVolumes is kubelet's CSI volume plugin on the node, as the manager
// needs it: the calls it makes to a driver (NodeGetCapabilities,
// NodeStageVolume, NodeUnstageVolume, NodePublishVolume,
// NodeUnpublishVolume), each addressed to a driver by name, and the files
// it keeps around them. CSI (a csi.Plugin) implements it; tests use a
// fake. Each call must be idempotent as CSI requires: the manager repeats
// a call whose outcome it does not know (after an error, after an agent
// restart).
//
// The NodeVolumes owns the directories and kubelet's vol_data.json files:
// Stage makes the staging directory and the vol_data.json beside it,
// Publish the target's parent and the vol_data.json in it (kubelet's
// format, which the manager's reconstruction reads back after a restart),
// Unpublish and Unstage remove them unless still mounted. The manager
// writes none of them; it only checks, after Unpublish and Unstage, that
// the path is no longer a mount point.
type NodeVolumes interface {
	// Capabilities reports what the driver's node service supports.
	Capabilities(ctx context.Context, driver string) (NodeCapabilities, error)
	// Stage makes the volume available at r.StagingPath, once per
	// volume on the node (called only for drivers with StageUnstage),
	// with the staging directory and its vol_data.json.
	Stage(ctx context.Context, r StageRequest) error
	// Unstage undoes Stage once no pod uses the volume, its directory
	// and vol_data.json included.
	Unstage(ctx context.Context, r UnstageRequest) error
	// Publish makes the volume available to one pod at r.TargetPath,
	// with the target's parent directory and its vol_data.json.
	Publish(ctx context.Context, r PublishRequest) error
	// Unpublish undoes Publish after the pod's containers are gone, the
	// target's directory and vol_data.json included.
	Unpublish(ctx context.Context, r UnpublishRequest) error
}

// NodeCapabilities are the node service capabilities that change the
// manager's calls.
type NodeCapabilities struct {
	// StageUnstage (STAGE_UNSTAGE_VOLUME): Stage is called before the
	// first Publish of a persistent volume and Unstage after the last
	// Unpublish; without it neither is, and PublishRequest.StagingPath is
	// empty.
	StageUnstage bool
	// VolumeMountGroup (VOLUME_MOUNT_GROUP): the pod's fsGroup goes to the
	// driver in StageRequest.FSGroup and PublishRequest.FSGroup; without
	// it the manager applies the fsGroup itself after Publish, when the
	// CSIDriver's fsGroupPolicy allows, as kubelet does.
	VolumeMountGroup bool
	// Plugin: the NodeVolumes asks the driver itself before each call, as
	// kubelet's CSI plugin does (CSI), and the two fields above are not
	// used: the manager calls Stage and Unstage for every persistent
	// volume, gives StageRequest and PublishRequest the pod's fsGroup and
	// StagingPath, and leaves applying the fsGroup after Publish to the
	// NodeVolumes. The driver then gets kubelet's calls and no more.
	Plugin bool
}

// Capability is the CSI VolumeCapability of a volume: a mounted
// (filesystem) one, or for a block volume (the requests' Block) the
// access mode only.
type Capability struct {
	// AccessMode is the PV's first access mode (ReadWriteOnce for inline
	// volumes or a PV with none), which the client maps to CSI's.
	AccessMode corev1.PersistentVolumeAccessMode
	// FSType is the PV's csi.fsType or the inline volume's fsType.
	FSType string
	// MountFlags are the PV's mountOptions.
	MountFlags []string
}

// StageRequest is NodeStageVolume's arguments.
type StageRequest struct {
	Driver       string
	VolumeHandle string
	SpecName     string // the PV's name
	// StagingPath is kubelet's
	// <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount,
	// which the NodeVolumes makes.
	StagingPath    string
	CSIDriver      *storagev1.CSIDriver // nil when the driver has none
	PublishContext map[string]string    // the VolumeAttachment's attachmentMetadata
	Capability     Capability
	VolumeContext  map[string]string // the PV's volumeAttributes
	Secrets        map[string]string // from the PV's nodeStageSecretRef
	FSGroup        *int64            // only for drivers with VolumeMountGroup
	// Block: a block volume (volumeMode Block, used in volumeDevices):
	// StagingPath is kubelet's BlockStagingPath, Capability's FSType and
	// MountFlags are empty, FSGroup is nil (kubelet's csi_block.go).
	Block bool
}

// UnstageRequest is NodeUnstageVolume's arguments.
type UnstageRequest struct {
	Driver       string
	VolumeHandle string
	StagingPath  string
	// Block and SpecName: a block volume, whose staging path is by the
	// PV's name (BlockStagingPath).
	Block    bool
	SpecName string
}

// PublishRequest is NodePublishVolume's arguments.
type PublishRequest struct {
	Driver       string
	VolumeHandle string // for inline volumes kubelet's csi-<sha256(podUID+volume name)>
	// StagingPath is Stage's path, empty for inline volumes and drivers
	// without StageUnstage.
	StagingPath string
	// TargetPath is kubelet's
	// <root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount; the
	// NodeVolumes makes its parent (with vol_data.json), the target itself
	// is the driver's to create.
	TargetPath     string
	SpecName       string               // the PV's name, or the pod's volume name for an inline volume
	Pod            *corev1.Pod          // the pod the volume is published for
	CSIDriver      *storagev1.CSIDriver // nil when the driver has none
	ReadOnly       bool
	PublishContext map[string]string
	Capability     Capability
	// VolumeContext: the volume's attributes, with the pod's
	// csi.storage.k8s.io/pod.* keys when the CSIDriver has podInfoOnMount.
	VolumeContext map[string]string
	Secrets       map[string]string // from nodePublishSecretRef
	FSGroup       *int64            // only for drivers with VolumeMountGroup
	// Ephemeral: a CSI inline volume (its lifecycle mode is Ephemeral).
	Ephemeral bool
	// Block: a block volume; TargetPath is kubelet's BlockPublishPath
	// (a file the driver makes, the device at it), StagingPath its
	// BlockStagingPath, FSGroup nil.
	Block bool
}

// UnpublishRequest is NodeUnpublishVolume's arguments.
type UnpublishRequest struct {
	Driver       string
	VolumeHandle string
	TargetPath   string
	PodUID       types.UID // the pod and spec name TargetPath is made of
	SpecName     string
	Block        bool // a block volume: TargetPath is BlockPublishPath
}

// EventRecorder is the method of client-go's record.EventRecorder the
// manager calls (FailedMount events, as kubelet's).
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Errors, for errors.Is.
var (
	// ErrUnsupported: a volume setting the manager does not honour; the
	// error names it.
	ErrUnsupported = errors.New("volume setting not supported")
	// ErrInvalidName: a name from the pod, an API object or the disk that
	// cannot safely become a path (a pod UID, a PV name, a driver name).
	ErrInvalidName = errors.New("name cannot become a path")
)
