package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
)

// Client calls one CSI driver's node service, as kubelet's csiDriverClient:
// a new gRPC connection to the driver's unix socket for every call (so a
// restarted driver is reached at once), the driver's capabilities asked
// before each operation that depends on them (kubelet keeps no cache), and
// kubelet's argument checks and error classes. The caller bounds each call
// with its context; Plugin's operations apply kubelet's 2-minute timeout.
type Client struct {
	driver string
	path   string // the socket's file path
}

// NewClient returns a client for driver at endpoint: a socket path, or
// "unix://" followed by one.
func NewClient(driver, endpoint string) (*Client, error) {
	if err := ValidateDriverName(driver); err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(endpoint, "unix://")
	if path == "" || strings.IndexByte(path, 0) >= 0 {
		return nil, fmt.Errorf("%w: endpoint %q of CSI driver %s", ErrInvalidRequest, endpoint, driver)
	}
	return &Client{driver: driver, path: path}, nil
}

// Driver is the driver's name.
func (c *Client) Driver() string { return c.driver }

// conn dials the socket (lazily, as kubelet's grpc.Dial), with kubelet's
// authority "localhost".
func (c *Client) conn() (*grpc.ClientConn, csipb.NodeClient, error) {
	path := c.path
	cc, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}),
	)
	if err != nil {
		return nil, nil, err
	}
	return cc, csipb.NewNodeClient(cc), nil
}

// NodeInfo is a driver's NodeGetInfo answer.
type NodeInfo struct {
	Driver     string
	NodeID     string
	MaxVolumes int64             // 0: no limit reported
	Topology   map[string]string // accessible topology segments
}

// NodeGetInfo calls NodeGetInfo.
func (c *Client) NodeGetInfo(ctx context.Context) (NodeInfo, error) {
	cc, nc, err := c.conn()
	if err != nil {
		return NodeInfo{}, err
	}
	defer cc.Close()
	res, err := nc.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err != nil {
		return NodeInfo{}, wrapRPC(err, nil, false)
	}
	info := NodeInfo{Driver: c.driver, NodeID: res.GetNodeId(), MaxVolumes: res.GetMaxVolumesPerNode()}
	if t := res.GetAccessibleTopology(); t != nil {
		info.Topology = t.Segments
	}
	return info, nil
}

// NodeGetCapabilities calls NodeGetCapabilities and returns the RPC
// capabilities the driver reports.
func (c *Client) NodeGetCapabilities(ctx context.Context) ([]csipb.NodeServiceCapability_RPC_Type, error) {
	cc, nc, err := c.conn()
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	res, err := nc.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, wrapRPC(err, nil, true)
	}
	var out []csipb.NodeServiceCapability_RPC_Type
	for _, cp := range res.GetCapabilities() {
		if cp == nil || cp.GetRpc() == nil {
			continue
		}
		out = append(out, cp.GetRpc().GetType())
	}
	return out, nil
}

// Capabilities are the node service capabilities kubelet looks at.
type Capabilities struct {
	StageUnstage, VolumeMountGroup, SingleNodeMultiWriter bool
	ExpandVolume, GetVolumeStats, GetVolumeHealth         bool
}

// Capabilities asks the driver once (one NodeGetCapabilities call) for
// all of them; kubelet asks once per decision (Supports), which the
// Plugin's operations do.
func (c *Client) Capabilities(ctx context.Context) (Capabilities, error) {
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		return Capabilities{}, err
	}
	var out Capabilities
	for _, cp := range caps {
		switch cp {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			out.StageUnstage = true
		case csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			out.VolumeMountGroup = true
		case csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			out.SingleNodeMultiWriter = true
		case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
			out.ExpandVolume = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			out.GetVolumeStats = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_HEALTH:
			out.GetVolumeHealth = true
		}
	}
	return out, nil
}

// Supports asks the driver (one NodeGetCapabilities call) whether it has
// the capability.
func (c *Client) Supports(ctx context.Context, capability csipb.NodeServiceCapability_RPC_Type) (bool, error) {
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		return false, err
	}
	for _, cp := range caps {
		if cp == capability {
			return true, nil
		}
	}
	return false, nil
}

// accessModeMapper is kubelet's getNodeV1AccessModeMapper: it asks for
// SINGLE_NODE_MULTI_WRITER (one NodeGetCapabilities call).
func (c *Client) accessModeMapper(ctx context.Context) (func(corev1.PersistentVolumeAccessMode) csipb.VolumeCapability_AccessMode_Mode, error) {
	snmw, err := c.Supports(ctx, csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	if err != nil {
		return nil, err
	}
	return func(am corev1.PersistentVolumeAccessMode) csipb.VolumeCapability_AccessMode_Mode {
		return AccessMode(am, snmw)
	}, nil
}

// AccessMode maps a PV access mode to CSI's as kubelet does; snmw says
// whether the driver has SINGLE_NODE_MULTI_WRITER.
func AccessMode(am corev1.PersistentVolumeAccessMode, snmw bool) csipb.VolumeCapability_AccessMode_Mode {
	switch am {
	case corev1.ReadWriteOnce:
		if snmw {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		if snmw {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN
}

// capability builds a VolumeCapability as kubelet: block for fsType
// "block", else a mount with fsType, mount flags and, when fsGroup is set,
// volumeMountGroup.
func capability(mode csipb.VolumeCapability_AccessMode_Mode, fsType string, mountOptions []string, fsGroup *int64) *csipb.VolumeCapability {
	vc := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode}}
	if fsType == fsTypeBlock {
		vc.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return vc
	}
	mv := &csipb.VolumeCapability_MountVolume{FsType: fsType, MountFlags: mountOptions}
	if fsGroup != nil {
		mv.VolumeMountGroup = strconv.FormatInt(*fsGroup, 10)
	}
	vc.AccessType = &csipb.VolumeCapability_Mount{Mount: mv}
	return vc
}

// NodeStageRequest is NodeStageVolume's arguments in kubelet's shape:
// FSType "block" asks for a block volume; FSGroup, when set, goes as
// volumeMountGroup (kubelet sets it only for drivers with
// VOLUME_MOUNT_GROUP).
type NodeStageRequest struct {
	VolumeHandle   string
	PublishContext map[string]string
	StagingPath    string
	FSType         string
	AccessMode     corev1.PersistentVolumeAccessMode
	Secrets        map[string]string
	VolumeContext  map[string]string
	MountOptions   []string
	FSGroup        *int64
}

// NodeStageVolume is kubelet's csiDriverClient.NodeStageVolume: a
// NodeGetCapabilities call (SINGLE_NODE_MULTI_WRITER, for the access
// mode), then NodeStageVolume. Plugin.Stage is the whole of kubelet's
// MountDevice around it; this is the single call, for a caller that keeps
// its own paths and files.
func (c *Client) NodeStageVolume(ctx context.Context, a NodeStageRequest) error {
	logr.FromContextOrDiscard(ctx).V(4).Info(csiLog("calling NodeStageVolume rpc"), "volID", a.VolumeHandle, "stagingTargetPath", a.StagingPath)
	if a.VolumeHandle == "" {
		return invalid("missing volume id")
	}
	if err := checkPath(a.StagingPath, "staging target path"); err != nil {
		return err
	}
	mapper, err := c.accessModeMapper(ctx)
	if err != nil {
		return err
	}
	cc, nc, err := c.conn()
	if err != nil {
		return err
	}
	defer cc.Close()
	_, err = nc.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
		VolumeId:          a.VolumeHandle,
		PublishContext:    a.PublishContext,
		StagingTargetPath: a.StagingPath,
		VolumeCapability:  capability(mapper(a.AccessMode), a.FSType, a.MountOptions, a.FSGroup),
		Secrets:           a.Secrets,
		VolumeContext:     a.VolumeContext,
	})
	return wrapRPC(err, []map[string]string{a.Secrets}, true)
}

// NodeUnstageVolume calls NodeUnstageVolume.
func (c *Client) NodeUnstageVolume(ctx context.Context, volumeHandle, stagingPath string) error {
	logr.FromContextOrDiscard(ctx).V(4).Info(csiLog("calling NodeUnstageVolume rpc"), "volID", volumeHandle, "stagingTargetPath", stagingPath)
	if volumeHandle == "" {
		return invalid("missing volume id")
	}
	if err := checkPath(stagingPath, "staging target path"); err != nil {
		return err
	}
	cc, nc, err := c.conn()
	if err != nil {
		return err
	}
	defer cc.Close()
	_, err = nc.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeHandle, StagingTargetPath: stagingPath})
	return wrapRPC(err, nil, false)
}

// NodePublishRequest is NodePublishVolume's arguments in kubelet's
// shape (StagingPath "" when the volume is not staged; FSType "block" for
// a block volume).
type NodePublishRequest struct {
	VolumeHandle   string
	ReadOnly       bool
	StagingPath    string
	TargetPath     string
	AccessMode     corev1.PersistentVolumeAccessMode
	PublishContext map[string]string
	VolumeContext  map[string]string
	Secrets        map[string]string
	FSType         string
	MountOptions   []string
	FSGroup        *int64
	redact         []map[string]string
}

// NodePublishVolume is kubelet's csiDriverClient.NodePublishVolume: a
// NodeGetCapabilities call (SINGLE_NODE_MULTI_WRITER), then
// NodePublishVolume. Plugin.Publish is the whole of kubelet's SetUpAt.
func (c *Client) NodePublishVolume(ctx context.Context, a NodePublishRequest) error {
	logr.FromContextOrDiscard(ctx).V(4).Info(csiLog("calling NodePublishVolume rpc"), "volID", a.VolumeHandle, "targetPath", a.TargetPath)
	if a.VolumeHandle == "" {
		return invalid("missing volume id")
	}
	if err := checkPath(a.TargetPath, "target path"); err != nil {
		return err
	}
	if a.StagingPath != "" {
		if err := checkPath(a.StagingPath, "staging target path"); err != nil {
			return err
		}
	}
	mapper, err := c.accessModeMapper(ctx)
	if err != nil {
		return err
	}
	cc, nc, err := c.conn()
	if err != nil {
		return err
	}
	defer cc.Close()
	_, err = nc.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId:          a.VolumeHandle,
		PublishContext:    a.PublishContext,
		StagingTargetPath: a.StagingPath,
		TargetPath:        a.TargetPath,
		VolumeCapability:  capability(mapper(a.AccessMode), a.FSType, a.MountOptions, a.FSGroup),
		Readonly:          a.ReadOnly,
		Secrets:           a.Secrets,
		VolumeContext:     a.VolumeContext,
	})
	return wrapRPC(err, append([]map[string]string{a.Secrets}, a.redact...), true)
}

// NodeUnpublishVolume calls NodeUnpublishVolume.
func (c *Client) NodeUnpublishVolume(ctx context.Context, volumeHandle, targetPath string) error {
	logr.FromContextOrDiscard(ctx).V(4).Info(csiLog("calling NodeUnpublishVolume rpc"), "volID", volumeHandle, "targetPath", targetPath)
	if volumeHandle == "" {
		return invalid("missing volume id")
	}
	if err := checkPath(targetPath, "target path"); err != nil {
		return err
	}
	cc, nc, err := c.conn()
	if err != nil {
		return err
	}
	defer cc.Close()
	_, err = nc.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeHandle, TargetPath: targetPath})
	return wrapRPC(err, nil, false)
}

// VolumeStats is NodeGetVolumeStats's answer as kubelet reads it: bytes
// and inodes (zero when the driver does not report a unit).
type VolumeStats struct {
	Available, Capacity, Used      int64
	InodesFree, Inodes, InodesUsed int64
}

// NodeGetVolumeStats calls NodeGetVolumeStats (Plugin.VolumeStats asks
// for GET_VOLUME_STATS first, as kubelet).
func (c *Client) NodeGetVolumeStats(ctx context.Context, volumeHandle, path string) (VolumeStats, error) {
	if volumeHandle == "" {
		return VolumeStats{}, invalid("missing volume id")
	}
	if path == "" {
		return VolumeStats{}, invalid("missing target path")
	}
	cc, nc, err := c.conn()
	if err != nil {
		return VolumeStats{}, err
	}
	defer cc.Close()
	res, err := nc.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: volumeHandle, VolumePath: path})
	if err != nil {
		return VolumeStats{}, wrapRPC(err, nil, false)
	}
	if res.GetUsage() == nil {
		return VolumeStats{}, errors.New("failed to get usage from response. usage is nil")
	}
	var s VolumeStats
	for _, u := range res.GetUsage() {
		switch u.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			s.Available, s.Capacity, s.Used = u.GetAvailable(), u.GetTotal(), u.GetUsed()
		case csipb.VolumeUsage_INODES:
			s.InodesFree, s.Inodes, s.InodesUsed = u.GetAvailable(), u.GetTotal(), u.GetUsed()
		}
	}
	return s, nil
}

// NodeExpandRequest is NodeExpandVolume's arguments in kubelet's shape.
type NodeExpandRequest struct {
	VolumeHandle, VolumePath, StagingPath, FSType string
	AccessMode                                    corev1.PersistentVolumeAccessMode
	NewSize                                       int64
	MountOptions                                  []string
	Secrets                                       map[string]string
}

// NodeExpandVolume is kubelet's csiDriverClient.NodeExpandVolume: a
// NodeGetCapabilities call (SINGLE_NODE_MULTI_WRITER), then
// NodeExpandVolume; it returns the capacity the driver reports.
func (c *Client) NodeExpandVolume(ctx context.Context, a NodeExpandRequest) (int64, error) {
	if a.VolumeHandle == "" {
		return a.NewSize, invalid("missing volume id")
	}
	if a.VolumePath == "" {
		return a.NewSize, invalid("missing volume path")
	}
	if a.NewSize < 0 {
		return a.NewSize, invalid("size can not be less than 0")
	}
	mapper, err := c.accessModeMapper(ctx)
	if err != nil {
		return a.NewSize, err
	}
	cc, nc, err := c.conn()
	if err != nil {
		return a.NewSize, err
	}
	defer cc.Close()
	res, err := nc.NodeExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{
		VolumeId:          a.VolumeHandle,
		VolumePath:        a.VolumePath,
		CapacityRange:     &csipb.CapacityRange{RequiredBytes: a.NewSize},
		StagingTargetPath: a.StagingPath,
		// kubelet sends no volumeMountGroup on expansion.
		VolumeCapability: capability(mapper(a.AccessMode), a.FSType, a.MountOptions, nil),
		Secrets:          a.Secrets,
	})
	if err != nil {
		return a.NewSize, wrapRPC(err, []map[string]string{a.Secrets}, true)
	}
	return res.GetCapacityBytes(), nil
}

// checkPath: a path given to a driver is absolute and clean; an empty
// one is kubelet's "missing <what>".
func checkPath(p, what string) error {
	if p == "" {
		return invalid("missing %s", what)
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.IndexByte(p, 0) >= 0 {
		return invalid("%s %q must be absolute and clean", what, p)
	}
	return nil
}
