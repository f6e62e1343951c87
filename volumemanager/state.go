package volumemanager

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// The desired state of the world: which pods want which volumes (kubelet's
// cache.DesiredStateOfWorld, for the volumes the manager serves).
type desiredVolume struct {
	spec          *spec
	pods          map[types.UID]*desiredPod
	reportedInUse bool
	// size is the PV's capacity, the size the volume should have
	// (kubelet's persistentVolumeSize), set by a pod that mounts it
	// read-write.
	size resource.Quantity
}

type desiredPod struct {
	pod        *corev1.Pod
	outerNames []string // the pod's names for the volume
	readOnly   bool
}

// The actual state of the world: what is attached, staged and published
// (kubelet's cache.ActualStateOfWorld).
type deviceState int

const (
	deviceNone      deviceState = iota
	deviceUncertain             // reconstructed, or a Stage that failed: maybe staged
	deviceStaged
)

type actualVolume struct {
	name       corev1.UniqueVolumeName
	driver     string
	handle     string
	inline     bool
	block      bool // volumeMode Block: mapped, not mounted (block.go)
	attachable bool
	attached   bool
	// publishContext is the VolumeAttachment's attachmentMetadata.
	publishContext map[string]string
	device         deviceState
	stagingPath    string // "" when the driver does not stage
	// claimSize is the size the volume is known to have: the claim's
	// status capacity, then what node expansion reached (kubelet's
	// persistentVolumeSize of the actual state).
	claimSize resource.Quantity
	// inUseExpansionError: the driver refused to expand the volume while
	// in use (FailedPrecondition): not tried again while it stays mounted.
	inUseExpansionError bool
	pods                map[types.UID]*actualPod
}

type actualPod struct {
	specName   string
	targetPath string
	// uncertain: reconstructed from disk or a Publish that failed:
	// maybe published, so it is published again when desired and
	// unpublished when not, never forgotten.
	uncertain bool
}

// podState is what the manager keeps of a pod between calls.
type podState struct {
	pod    *corev1.Pod
	errors []string // resolution errors, popped by WaitForAttachAndMount
	// expected are the pod volumes the manager serves that a container
	// uses (kubelet's getExpectedVolumes, restricted to them).
	expected []string
	volumes  map[string]corev1.UniqueVolumeName // outer name → volume
}

func (a *actualVolume) mountedFor(uid types.UID) bool {
	p := a.pods[uid]
	return p != nil && !p.uncertain
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
