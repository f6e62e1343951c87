package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	storagev1 "k8s.io/api/storage/v1"
)

// StageRequest stages a persistent volume on the node (kubelet's
// MountDevice; SetUpDevice for a block volume).
type StageRequest struct {
	Volume
	// PublishContext: the VolumeAttachment's status.attachmentMetadata;
	// nil when the driver needs no attach.
	PublishContext map[string]string
	// Secrets: the data of Volume.NodeStageSecretRef's Secret.
	Secrets Secrets
	// FSGroup: the pod's fsGroup, sent as volumeMountGroup when the driver
	// has VOLUME_MOUNT_GROUP.
	FSGroup *int64
	// SELinuxLabel: the mount context for the volume, used when CSIDriver
	// says seLinuxMount (SELinuxMountReadWriteOncePod, on in v1.37).
	SELinuxLabel string
	// CSIDriver: the driver's CSIDriver object, nil when none exists.
	CSIDriver *storagev1.CSIDriver
}

// StageResult says where the volume was staged.
type StageResult struct {
	// StagingPath: the staging target path (for a filesystem volume
	// created even when the driver does not stage, as kubelet's).
	StagingPath string
	// Staged: false when the driver lacks STAGE_UNSTAGE_VOLUME, and
	// NodeStageVolume was not called.
	Staged bool
}

// Stage stages v as kubelet v1.37.2: NodeGetCapabilities (STAGE_UNSTAGE),
// the staging directory (0750), vol_data.json beside it, NodeGetCapabilities
// (VOLUME_MOUNT_GROUP), NodeStageVolume (after its own NodeGetCapabilities
// for SINGLE_NODE_MULTI_WRITER). On an error that is final the directory
// is removed; an error matching ErrUncertain leaves it (the volume may be
// staged).
func (p *Plugin) Stage(ctx context.Context, req StageRequest) (StageResult, error) {
	if err := req.Volume.validate(); err != nil {
		return StageResult{}, err
	}
	if req.Ephemeral {
		return StageResult{}, fmt.Errorf("%w: inline CSI volume %s is never staged", ErrInvalidRequest, req.SpecName)
	}
	c, err := p.Client(req.Driver)
	if err != nil {
		return StageResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if req.Block {
		return p.stageBlock(ctx, c, req)
	}
	log := logr.FromContextOrDiscard(ctx)
	stagingPath, err := p.layout.StagingPath(req.Driver, req.VolumeHandle)
	if err != nil {
		return StageResult{}, err
	}
	res := StageResult{StagingPath: stagingPath}
	stageSet, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return res, err
	}
	mountOptions, seLinux := seLinuxMountOptions(req.MountOptions, req.SELinuxLabel, req.CSIDriver)
	if err := mkdirAllDir(stagingPath); err != nil {
		return res, errors.New(csiLog("attacher.MountDevice failed to create dir %#v:  %v", stagingPath, err))
	}
	data := VolumeData{VolumeHandle: req.VolumeHandle, DriverName: req.Driver}
	if seLinux {
		data.SELinuxMountContext = req.SELinuxLabel
	}
	if !stageSet {
		log.Info(csiLog("attacher.MountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping MountDevice..."))
		return res, nil
	}
	mountGroup, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return res, settled(csiLog("attacher.MountDevice failed to determine if the node service has VOLUME_MOUNT_GROUP capability"), err)
	}
	if err := writeVolumeData(filepath.Dir(stagingPath), data); err != nil {
		if rerr := p.removeMountDir(stagingPath); rerr != nil {
			log.Error(rerr, csiLog("attacher.MountDevice failed to remove mount dir after error [%s]", stagingPath))
		}
		return res, err
	}
	var fsGroup *int64
	if mountGroup {
		fsGroup = req.FSGroup
	}
	err = c.NodeStageVolume(ctx, NodeStageRequest{
		VolumeHandle:   req.VolumeHandle,
		PublishContext: req.PublishContext,
		StagingPath:    stagingPath,
		FSType:         req.FSType,
		AccessMode:     req.accessMode(),
		Secrets:        req.Secrets.orEmpty(),
		VolumeContext:  req.VolumeAttributes,
		MountOptions:   mountOptions,
		FSGroup:        fsGroup,
	})
	if err != nil {
		if !errors.Is(err, ErrUncertain) {
			log.Error(err, csiLog("attacher.MountDevice failed"))
			if rerr := p.removeMountDir(stagingPath); rerr != nil {
				log.Error(rerr, csiLog("attacher.MountDevice failed to remove mount dir after error [%s]", stagingPath))
			}
		}
		return res, err
	}
	log.V(4).Info(csiLog("attacher.MountDevice successfully requested NodeStageVolume [%s]", stagingPath))
	res.Staged = true
	return res, nil
}

// stageBlock is csi_block.go's NewBlockVolumeMapper (vol_data.json in the
// data dir) then SetUpDevice.
func (p *Plugin) stageBlock(ctx context.Context, c *Client, req StageRequest) (StageResult, error) {
	paths, err := p.layout.BlockVolumePaths(req.SpecName)
	if err != nil {
		return StageResult{}, err
	}
	if err := p.writeBlockData(paths, req.Volume); err != nil {
		return StageResult{}, err
	}
	stageSet, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return StageResult{}, errors.New(csiLog("blockMapper.stageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: %v", err))
	}
	if !stageSet {
		return StageResult{}, nil
	}
	publishContext := req.PublishContext
	if publishContext == nil {
		publishContext = map[string]string{}
	}
	if err := mkdirAllDir(paths.Staging); err != nil {
		return StageResult{}, errors.New(csiLog("blockMapper.stageVolumeForBlock failed to create dir %s: %v", paths.Staging, err))
	}
	err = c.NodeStageVolume(ctx, NodeStageRequest{
		VolumeHandle:   req.VolumeHandle,
		PublishContext: publishContext,
		StagingPath:    paths.Staging,
		FSType:         fsTypeBlock,
		AccessMode:     req.accessMode(),
		Secrets:        req.Secrets.orEmpty(),
		VolumeContext:  req.VolumeAttributes,
	})
	if err != nil {
		if !errors.Is(err, ErrUncertain) {
			_ = p.cleanupBlock(paths, "")
		}
		return StageResult{}, err
	}
	return StageResult{StagingPath: paths.Staging, Staged: true}, nil
}

// UnstageRequest unstages a volume staged by Stage.
type UnstageRequest struct {
	Driver, VolumeHandle string
	// Block and SpecName: a block volume, whose staging path is by spec name.
	Block    bool
	SpecName string
}

// Unstage is kubelet's UnmountDevice: vol_data.json beside the staging
// path is read (missing: nothing to do, as kubelet); NodeGetCapabilities;
// NodeUnstageVolume when the driver stages; then the directory, its
// vol_data.json and parent removed unless still mounted.
func (p *Plugin) Unstage(ctx context.Context, req UnstageRequest) error {
	if err := ValidateDriverName(req.Driver); err != nil {
		return err
	}
	if err := ValidateVolumeHandle(req.VolumeHandle); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if req.Block {
		return p.unstageBlock(ctx, req)
	}
	log := logr.FromContextOrDiscard(ctx)
	stagingPath, err := p.layout.StagingPath(req.Driver, req.VolumeHandle)
	if err != nil {
		return err
	}
	data, err := ReadVolumeData(filepath.Dir(stagingPath))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			log.V(4).Info(csiLog("attacher.UnmountDevice skipped because volume data file [%s] does not exist", filepath.Dir(stagingPath)))
			return nil
		}
		return err
	}
	if data.DriverName != req.Driver || data.VolumeHandle != req.VolumeHandle {
		return fmt.Errorf("%w: %s names driver %s volume %q, not driver %s volume %q", ErrInvalidRequest,
			filepath.Join(filepath.Dir(stagingPath), VolDataFileName), data.DriverName, data.VolumeHandle, req.Driver, req.VolumeHandle)
	}
	c, err := p.Client(req.Driver)
	if err != nil {
		return err
	}
	stageSet, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return settled(csiLog("attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set"), err)
	}
	if stageSet {
		if err := c.NodeUnstageVolume(ctx, req.VolumeHandle, stagingPath); err != nil {
			return settled(csiLog("attacher.UnmountDevice failed"), err)
		}
	}
	if err := p.removeMountDir(stagingPath); err != nil {
		return errors.New(csiLog("failed to clean up global mount %s: %s", filepath.Dir(stagingPath), err))
	}
	return nil
}

// unstageBlock is csi_block.go's TearDownDevice.
func (p *Plugin) unstageBlock(ctx context.Context, req UnstageRequest) error {
	paths, err := p.layout.BlockVolumePaths(req.SpecName)
	if err != nil {
		return err
	}
	c, err := p.Client(req.Driver)
	if err != nil {
		return err
	}
	if _, err := os.Stat(paths.Staging); err == nil {
		stageSet, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		if err != nil {
			return settled(csiLog("blockMapper.unstageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability"), err)
		}
		if stageSet {
			if err := c.NodeUnstageVolume(ctx, req.VolumeHandle, paths.Staging); err != nil {
				return settled(csiLog("blockMapper.unstageVolumeForBlock failed"), err)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return p.cleanupBlock(paths, "")
}

// writeBlockData writes the block volume's vol_data.json in its data dir.
func (p *Plugin) writeBlockData(paths BlockPaths, v Volume) error {
	if err := mkdirAllDir(paths.DataDir); err != nil {
		return errors.New(csiLog("failed to create data dir %s:  %v", paths.DataDir, err))
	}
	return writeVolumeData(paths.DataDir, VolumeData{
		SpecVolID:    v.SpecName,
		VolumeHandle: v.VolumeHandle,
		DriverName:   v.Driver,
		NodeName:     p.nodeName,
		AttachmentID: AttachmentName(v.VolumeHandle, v.Driver, p.nodeName),
	})
}

// cleanupBlock is cleanupOrphanDeviceFiles: the publish dir, the staging
// dir and the volume's plugin dir (data, dev), each removed only when not
// a mount point and empty (kubelet removes the plugin dir recursively on
// one filesystem). paths are BlockVolumePaths; publish, a pod's publish
// path, when set, is removed first.
func (p *Plugin) cleanupBlock(paths BlockPaths, publish string) error {
	var errs []error
	remove := func(dir string) {
		if mnt, err := p.isMountPoint(dir); err != nil || mnt {
			if err != nil {
				errs = append(errs, err)
			}
			return
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if publish != "" {
		remove(publish)
	}
	remove(paths.Publish)
	remove(paths.Staging)
	if err := os.Remove(filepath.Join(paths.DataDir, VolDataFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	remove(paths.DataDir)
	remove(paths.GlobalMap)
	remove(filepath.Dir(paths.DataDir))
	return errors.Join(errs...)
}

// mkdirAllDir is kubelet's MkdirAllWithPathCheck at 0750: an existing
// non-directory is an error.
func mkdirAllDir(dir string) error {
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("path %q exists but is not a directory", dir)
		}
		return nil
	}
	return os.MkdirAll(dir, 0o750)
}

// seLinuxMountOptions adds the SELinux context mount option when the
// CSIDriver supports it and a label is given (util.AddSELinuxMountOption).
func seLinuxMountOptions(opts []string, label string, d *storagev1.CSIDriver) ([]string, bool) {
	if label == "" || d == nil || d.Spec.SELinuxMount == nil || !*d.Spec.SELinuxMount {
		return opts, false
	}
	out := append(append([]string(nil), opts...), fmt.Sprintf("context=%q", label))
	return out, true
}
