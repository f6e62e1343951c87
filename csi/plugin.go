package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Timeout is kubelet's csiTimeout: the bound on each volume operation
// (all of its calls together) and on NodeGetInfo at registration when the
// plugin watcher gives none.
const Timeout = 2 * time.Minute

// NodeInfoWriter writes what a registered driver adds to the API: the
// Node's nodeid annotation and topology labels, then the CSINode's driver
// entry (InstallDriverOnNode, InstallDriverOnCSINode), and removes them
// when the driver goes. An agent implements it with its own API client;
// kubelet retries each write with a short back-off (4 tries).
type NodeInfoWriter interface {
	InstallDriver(ctx context.Context, info NodeInfo) error
	UninstallDriver(ctx context.Context, driver string) error
}

// Plugin is kubelet's CSI volume plugin on the node side: the registry of
// drivers (the plugin watcher's handler: ValidatePlugin, RegisterPlugin,
// DeRegisterPlugin) and the volume operations over them (Stage, Unstage,
// Publish, Unpublish, VolumeStats, Expand), with kubelet's paths under
// the root directory. Safe for concurrent use.
type Plugin struct {
	layout       Layout
	nodeName     string
	timeout      time.Duration
	writer       NodeInfoWriter
	log          logr.Logger
	isMountPoint func(string) (bool, error)

	mu      sync.RWMutex
	drivers map[string]driver
}

type driver struct {
	endpoint string
	version  *utilversion.Version
	info     NodeInfo
}

// Option configures a Plugin.
type Option func(*Plugin)

// WithTimeout replaces kubelet's 2-minute operation timeout.
func WithTimeout(d time.Duration) Option { return func(p *Plugin) { p.timeout = d } }

// WithNodeInfoWriter makes RegisterPlugin and DeRegisterPlugin write the
// driver's node info to the API, as kubelet's nodeinfomanager; a failed
// write fails the registration (and unregisters the driver), as kubelet's.
func WithNodeInfoWriter(w NodeInfoWriter) Option { return func(p *Plugin) { p.writer = w } }

// WithLogger sets the logger for the registration calls, which take no
// context (the volume operations log through the context's logger).
func WithLogger(l logr.Logger) Option { return func(p *Plugin) { p.log = l } }

// WithMountPointCheck replaces the mount-point test used before removing
// a directory (default: statx's mount-root attribute, else a device
// change from the parent, as mount-utils' IsLikelyNotMountPoint).
func WithMountPointCheck(f func(path string) (bool, error)) Option {
	return func(p *Plugin) { p.isMountPoint = f }
}

// New returns a Plugin for kubelet's root directory rootDir (absolute) on
// node nodeName.
func New(rootDir, nodeName string, opts ...Option) (*Plugin, error) {
	if err := validateRoot(rootDir); err != nil {
		return nil, err
	}
	if nodeName == "" {
		return nil, fmt.Errorf("%w: empty node name", ErrInvalidRequest)
	}
	p := &Plugin{
		layout:       Layout{Root: rootDir},
		nodeName:     nodeName,
		timeout:      Timeout,
		log:          logr.Discard(),
		isMountPoint: isMountPoint,
		drivers:      map[string]driver{},
	}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Layout is the plugin's directory layout.
func (p *Plugin) Layout() Layout { return p.layout }

// ValidatePlugin is the plugin watcher's first call for a CSI socket:
// kubelet's version checks (a non-empty list with a v1.x version, higher
// than an already registered driver of that name).
func (p *Plugin) ValidatePlugin(pluginName, endpoint string, versions []string) error {
	p.log.Info(csiLog("Trying to validate a new CSI Driver with name: %s endpoint: %s versions: %s", pluginName, endpoint, strings.Join(versions, ",")))
	if _, err := p.validateVersions("ValidatePlugin", pluginName, versions); err != nil {
		return fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: %w", pluginName, endpoint, err)
	}
	return nil
}

func (p *Plugin) validateVersions(caller, name string, versions []string) (*utilversion.Version, error) {
	if err := ValidateDriverName(name); err != nil {
		return nil, &classErr{msg: err.Error(), class: ErrRegistration, cause: err}
	}
	if len(versions) == 0 {
		return nil, registrationErr(csiLog("%s for CSI driver %q failed. Plugin returned an empty list for supported versions", caller, name))
	}
	highest, err := utilversion.HighestSupportedVersion(versions)
	if err != nil {
		return nil, registrationErr(csiLog("%s for CSI driver %q failed. None of the versions specified %q are supported. err=%v", caller, name, versions, err))
	}
	p.mu.RLock()
	existing, ok := p.drivers[name]
	p.mu.RUnlock()
	if ok && !existing.version.LessThan(highest) {
		return nil, registrationErr(csiLog("%s for CSI driver %q failed. Another driver with the same name is already registered with a higher supported version: %q", caller, name, existing.version))
	}
	return highest, nil
}

// RegisterPlugin registers a driver as kubelet: versions checked again,
// the driver recorded, NodeGetInfo called within timeout (kubelet's 2
// minutes when 0), an empty node ID refused, then the node info written
// through the NodeInfoWriter; on any failure the driver is unregistered.
func (p *Plugin) RegisterPlugin(ctx context.Context, pluginName, endpoint string, versions []string, timeout time.Duration) error {
	p.log.Info(csiLog("Register new plugin with name: %s at endpoint: %s", pluginName, endpoint))
	highest, err := p.validateVersions("RegisterPlugin", pluginName, versions)
	if err != nil {
		return err
	}
	c, err := NewClient(pluginName, endpoint)
	if err != nil {
		return &classErr{msg: err.Error(), class: ErrRegistration, cause: err}
	}
	p.mu.Lock()
	p.drivers[pluginName] = driver{endpoint: endpoint, version: highest}
	p.mu.Unlock()

	if timeout <= 0 {
		timeout = Timeout
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := c.NodeGetInfo(ictx)
	if err == nil && info.NodeID == "" {
		err = registrationErr("error adding CSI driver node info: driverNodeID must not be empty")
	}
	if err == nil && p.writer != nil {
		err = p.writer.InstallDriver(ictx, info)
	}
	if err != nil {
		p.unregister(ctx, pluginName)
		return err
	}
	p.mu.Lock()
	if d, ok := p.drivers[pluginName]; ok && d.endpoint == endpoint {
		d.info = info
		p.drivers[pluginName] = d
	}
	p.mu.Unlock()
	return nil
}

// DeRegisterPlugin removes the driver and its node info, as kubelet's
// (failures are logged, not returned).
func (p *Plugin) DeRegisterPlugin(pluginName, endpoint string) {
	p.log.Info(csiLog("registrationHandler.DeRegisterPlugin request for plugin %s, endpoint %s", pluginName, endpoint))
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	p.unregister(ctx, pluginName)
}

func (p *Plugin) unregister(ctx context.Context, name string) {
	p.mu.Lock()
	delete(p.drivers, name)
	p.mu.Unlock()
	if p.writer == nil {
		return
	}
	if err := p.writer.UninstallDriver(ctx, name); err != nil {
		p.log.Error(err, csiLog("Error uninstalling CSI driver %s", name))
	}
}

// Drivers lists the registered drivers' names, sorted.
func (p *Plugin) Drivers() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	names := make([]string, 0, len(p.drivers))
	for n := range p.drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DriverInfo is what a registered driver answered to NodeGetInfo.
func (p *Plugin) DriverInfo(name string) (NodeInfo, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	d, ok := p.drivers[name]
	return d.info, ok && d.info.NodeID != ""
}

// Client returns a client for a registered driver, or an error matching
// ErrDriverNotRegistered.
func (p *Plugin) Client(name string) (*Client, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: driver name is empty", ErrInvalidName)
	}
	p.mu.RLock()
	d, ok := p.drivers[name]
	p.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("driver name %s %w", name, ErrDriverNotRegistered)
	}
	return NewClient(name, d.endpoint)
}

// isMountPoint: statx's STATX_ATTR_MOUNT_ROOT where the kernel reports
// it, else a device different from the parent's. A missing path is not a
// mount point.
func isMountPoint(path string) (bool, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS, &stx)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err == nil && stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	var st, parent unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := unix.Lstat(path+"/..", &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// removeMountDir is kubelet's removeMountDir: if dir is not a mount
// point, remove it, the vol_data.json beside it and their parent (each
// only if empty / present). A mounted dir is left alone, without error.
func (p *Plugin) removeMountDir(dir string) error {
	mnt, err := p.isMountPoint(dir)
	if err != nil {
		return err
	}
	if mnt {
		return nil
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.New(csiLog("failed to remove dir [%s]: %v", dir, err))
	}
	parent := parentDir(dir)
	data := parent + "/" + VolDataFileName
	if err := os.Remove(data); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.New(csiLog("failed to delete volume data file [%s]: %v", data, err))
	}
	if err := os.Remove(parent); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.New(csiLog("failed to delete volume path [%s]: %v", parent, err))
	}
	return nil
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Operations are the volume operations a volume manager calls, each with
// a plain request, so it can wrap or fake them; Plugin implements it.
type Operations interface {
	Stage(ctx context.Context, req StageRequest) (StageResult, error)
	Unstage(ctx context.Context, req UnstageRequest) error
	Publish(ctx context.Context, req PublishRequest) (PublishResult, error)
	Unpublish(ctx context.Context, req UnpublishRequest) error
	VolumeStats(ctx context.Context, driver, volumeHandle, path string) (VolumeStats, error)
	Expand(ctx context.Context, req ExpandRequest) (int64, error)
}

var _ Operations = (*Plugin)(nil)
