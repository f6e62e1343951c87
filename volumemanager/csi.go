package volumemanager

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/mounts"
)

// CSI returns the NodeVolumes of kubelet's CSI volume plugin p (package
// csi): its drivers (registered through the plugin watcher) get kubelet's
// calls, and p owns the staging and target directories and their
// vol_data.json files, in kubelet's layout and format, which the
// manager's reconstruction reads back. p's root directory must be the
// manager's: a request for a path p would not use is refused before
// anything is done.
func CSI(p *csi.Plugin) NodeVolumes { return csiVolumes{p} }

type csiVolumes struct{ p *csi.Plugin }

// Capabilities says the plugin decides (NodeCapabilities.Plugin): csi
// asks the driver before each call as kubelet, so the manager's calls add
// none to kubelet's. A driver not registered is csi's error.
func (c csiVolumes) Capabilities(_ context.Context, driver string) (NodeCapabilities, error) {
	if _, err := c.p.Client(driver); err != nil {
		return NodeCapabilities{}, err
	}
	return NodeCapabilities{Plugin: true}, nil
}

func (c csiVolumes) Stage(ctx context.Context, r StageRequest) error {
	if err := c.samePath("staging", r.StagingPath, func(l csi.Layout) (string, error) {
		if r.Block {
			b, err := l.BlockVolumePaths(r.SpecName)
			return b.Staging, err
		}
		return l.StagingPath(r.Driver, r.VolumeHandle)
	}); err != nil {
		return err
	}
	v := csiVolume(r.Driver, r.VolumeHandle, r.SpecName, false, false, r.Capability, r.VolumeContext)
	v.Block = r.Block
	_, err := c.p.Stage(ctx, csi.StageRequest{
		Volume:         v,
		PublishContext: maps.Clone(r.PublishContext),
		Secrets:        csi.Secrets(r.Secrets),
		FSGroup:        r.FSGroup,
		CSIDriver:      r.CSIDriver,
	})
	return err
}

func (c csiVolumes) Unstage(ctx context.Context, r UnstageRequest) error {
	if err := c.samePath("staging", r.StagingPath, func(l csi.Layout) (string, error) {
		if r.Block {
			b, err := l.BlockVolumePaths(r.SpecName)
			return b.Staging, err
		}
		return l.StagingPath(r.Driver, r.VolumeHandle)
	}); err != nil {
		return err
	}
	return c.p.Unstage(ctx, csi.UnstageRequest{Driver: r.Driver, VolumeHandle: r.VolumeHandle, Block: r.Block, SpecName: r.SpecName})
}

func (c csiVolumes) Publish(ctx context.Context, r PublishRequest) error {
	if r.Pod == nil {
		return fmt.Errorf("%w: publish of %s without its pod", csi.ErrInvalidRequest, r.SpecName)
	}
	if err := c.samePath("target", r.TargetPath, func(l csi.Layout) (string, error) {
		return targetPath(l, r.Pod.UID, r.SpecName, r.Block)
	}); err != nil {
		return err
	}
	v := csiVolume(r.Driver, r.VolumeHandle, r.SpecName, r.Ephemeral, r.ReadOnly, r.Capability, r.VolumeContext)
	v.Block = r.Block
	res, err := c.p.Publish(ctx, csi.PublishRequest{
		Volume:         v,
		Pod:            r.Pod,
		PublishContext: maps.Clone(r.PublishContext),
		Secrets:        csi.Secrets(r.Secrets),
		FSGroup:        r.FSGroup,
		CSIDriver:      defaultedDriver(r.CSIDriver),
	})
	if err != nil {
		return err
	}
	// kubelet's SetUpAt then gives the volume to the fsGroup, unless the
	// pod's fsGroupChangePolicy finds it done.
	if res.ApplyFSGroup && r.FSGroup != nil && !skipOwnership(r.Pod, res.TargetPath, *r.FSGroup) {
		if err := mounts.SetVolumeOwnership(res.TargetPath, *r.FSGroup, false); err != nil {
			return fmt.Errorf("applyFSGroup failed for vol %s: %v", r.VolumeHandle, err)
		}
	}
	return nil
}

func (c csiVolumes) Unpublish(ctx context.Context, r UnpublishRequest) error {
	if err := c.samePath("target", r.TargetPath, func(l csi.Layout) (string, error) {
		return targetPath(l, r.PodUID, r.SpecName, r.Block)
	}); err != nil {
		return err
	}
	return c.p.Unpublish(ctx, csi.UnpublishRequest{Driver: r.Driver, VolumeHandle: r.VolumeHandle, PodUID: string(r.PodUID), SpecName: r.SpecName, Block: r.Block})
}

// targetPath is the plugin's publish path: a block volume's or a
// filesystem volume's.
func targetPath(l csi.Layout, uid types.UID, specName string, block bool) (string, error) {
	if block {
		b, err := l.BlockPaths(string(uid), specName)
		return b.Publish, err
	}
	return l.PublishPath(string(uid), specName)
}

// samePath refuses a request whose path is not the one the plugin will
// use (a manager and a plugin with different root directories).
func (c csiVolumes) samePath(what, got string, want func(csi.Layout) (string, error)) error {
	p, err := want(c.p.Layout())
	if err != nil {
		return err
	}
	if p != got {
		return fmt.Errorf("%w: %s path %s is not the CSI plugin's %s (different root directories)", csi.ErrInvalidRequest, what, got, p)
	}
	return nil
}

// defaultedDriver gives a CSIDriver read without the API server's
// defaults the default lifecycle mode (Persistent), as the manager counts
// it.
func defaultedDriver(d *storagev1.CSIDriver) *storagev1.CSIDriver {
	if d == nil || len(d.Spec.VolumeLifecycleModes) > 0 {
		return d
	}
	d = d.DeepCopy()
	d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	return d
}

func csiVolume(driver, handle, specName string, ephemeral, readOnly bool, c Capability, attrs map[string]string) csi.Volume {
	return csi.Volume{
		Driver: driver, VolumeHandle: handle, SpecName: specName, Ephemeral: ephemeral, ReadOnly: readOnly,
		FSType:           c.FSType,
		AccessModes:      []corev1.PersistentVolumeAccessMode{c.AccessMode},
		MountOptions:     slices.Clone(c.MountFlags),
		VolumeAttributes: maps.Clone(attrs),
	}
}
