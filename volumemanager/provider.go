package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/validation"
)

// ErrNotPublished: a volume the manager serves is not published yet
// (WaitForAttachAndMount had not returned nil for the pod).
var ErrNotPublished = errors.New("volume not published")

// VolumeSetter sets up one in-tree volume of a pod: apiobjects.Volumes and
// podsync.DefaultVolumes have this method.
type VolumeSetter interface {
	Volume(ctx context.Context, pod *corev1.Pod, vol corev1.Volume) (mounts.Volume, error)
}

// Provider gives podsync (as its VolumeProvider and VolumeRemounter) a
// pod's volumes: those the Manager serves from what it published, every
// other one from InTree, one by one. A used volume the manager serves
// that is not published is ErrNotPublished, never left out.
type Provider struct {
	Manager *Manager
	InTree  VolumeSetter
}

// Volumes implements podsync.VolumeProvider.
func (p Provider) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	if err := validation.Check(pod); err != nil {
		return nil, err
	}
	published, err := p.Manager.Volumes(ctx, pod)
	if err != nil {
		return nil, err
	}
	used, devices := usedVolumes(pod)
	out := make(mounts.VolumeMap, len(pod.Spec.Volumes))
	var first error
	for _, vol := range pod.Spec.Volumes {
		if vol.Image != nil {
			continue // podsync's SyncPod pulls image volumes and adds them itself
		}
		if Manages(vol) {
			if v, ok := published[vol.Name]; ok {
				out[vol.Name] = v
			} else if used[vol.Name] || (devices[vol.Name] && !p.Manager.mapped(pod.UID, vol.Name)) {
				first = cmpFirst(first, fmt.Errorf("volume %q: %w", vol.Name, ErrNotPublished))
			}
			continue
		}
		if p.InTree == nil {
			first = cmpFirst(first, fmt.Errorf("volume %q: no in-tree provider: %w", vol.Name, ErrUnsupported))
			continue
		}
		v, err := p.InTree.Volume(ctx, pod, vol)
		if err != nil {
			first = cmpFirst(first, err)
			continue
		}
		out[vol.Name] = v
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// RemountVolumes implements podsync.VolumeRemounter: InTree's, when it
// has the method (apiobjects.Volumes); CSI volumes need no remount (a
// driver with requiresRepublish is refused).
func (p Provider) RemountVolumes(ctx context.Context, pod *corev1.Pod) (time.Time, error) {
	if r, ok := p.InTree.(interface {
		RemountVolumes(context.Context, *corev1.Pod) (time.Time, error)
	}); ok {
		return r.RemountVolumes(ctx, pod)
	}
	return time.Time{}, nil
}

func cmpFirst(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
