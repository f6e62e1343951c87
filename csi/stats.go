package csi

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// VolumeStats is kubelet's metricsCsi.GetMetrics: NodeGetCapabilities
// (GET_VOLUME_STATS; without it an error matching ErrNotSupported), then
// NodeGetVolumeStats for the volume published at path.
func (p *Plugin) VolumeStats(ctx context.Context, driver, volumeHandle, path string) (VolumeStats, error) {
	if err := ValidateVolumeHandle(volumeHandle); err != nil {
		return VolumeStats{}, err
	}
	c, err := p.Client(driver)
	if err != nil {
		return VolumeStats{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ok, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	if err != nil {
		return VolumeStats{}, err
	}
	if !ok {
		return VolumeStats{}, &classed{class: ErrNotSupported, msg: fmt.Sprintf("metrics are not supported for %s Volumes", driver)}
	}
	return c.NodeGetVolumeStats(ctx, volumeHandle, path)
}

// ExpandRequest expands a volume on the node (kubelet's NodeExpand).
type ExpandRequest struct {
	Volume
	// VolumePath: the publish path (filesystem) or the device path (block);
	// StagingPath: the staging path, "" if not staged.
	VolumePath, StagingPath string
	NewSize                 int64 // bytes
	// Secrets: the data of Volume.NodeExpandSecretRef's Secret.
	Secrets Secrets
}

// Expansion error classes (kubelet's FailedPrecondition and Infeasible
// errors), matched with errors.Is besides the driver's gRPC code.
var (
	// ErrVolumeInUse: the driver answered FailedPrecondition.
	ErrVolumeInUse = fmt.Errorf("volume in use")
	// ErrInfeasible: the driver answered InvalidArgument, OutOfRange or NotFound.
	ErrInfeasible = fmt.Errorf("expansion infeasible")
)

// Expand is kubelet's nodeExpandWithClient: NodeGetCapabilities
// (EXPAND_VOLUME; without it ErrNotSupported), NodeExpandVolume (after
// NodeGetCapabilities for SINGLE_NODE_MULTI_WRITER). It returns the
// capacity the driver reports.
func (p *Plugin) Expand(ctx context.Context, req ExpandRequest) (int64, error) {
	if err := req.Volume.validate(); err != nil {
		return 0, err
	}
	c, err := p.Client(req.Driver)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ok, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	if err != nil {
		return 0, fmt.Errorf("Expander.NodeExpand failed to check if node supports expansion : %w", err)
	}
	if !ok {
		return 0, &classed{class: ErrNotSupported, msg: fmt.Sprintf("NodeExpand is not supported by the CSI driver %s", req.Driver)}
	}
	fsType := req.FSType
	if req.Block {
		fsType = fsTypeBlock
	}
	size, err := c.NodeExpandVolume(ctx, NodeExpandRequest{
		VolumeHandle: req.VolumeHandle,
		VolumePath:   req.VolumePath,
		StagingPath:  req.StagingPath,
		FSType:       fsType,
		AccessMode:   req.accessMode(),
		NewSize:      req.NewSize,
		MountOptions: req.MountOptions,
		Secrets:      req.Secrets.orEmpty(),
	})
	if err != nil {
		switch status.Code(err) {
		case codes.FailedPrecondition:
			// kubelet's FailedPreconditionError, wrapped.
			return 0, &classed{class: ErrVolumeInUse, msg: "Expander.NodeExpand failed to expand the volume : " + err.Error(), cause: err}
		case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
			// kubelet's InfeasibleError.
			return 0, &classed{class: ErrInfeasible, msg: "Expander.NodeExpand failed to expand the volume " + err.Error(), cause: err}
		}
		return 0, fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", err)
	}
	return size, nil
}
