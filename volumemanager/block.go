package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
)

// WithBlockPathHandler sets how block volumes are mapped for pods
// (default: HostBlockPaths).
func WithBlockPathHandler(h BlockPathHandler) Option { return func(m *Manager) { m.blk = h } }

// mapBlock is kubelet's MapVolume for a CSI block volume: SetUpDevice
// (NodeStageVolume at the block staging path) unless staged, MapPodDevice
// (NodePublishVolume at the pod's publish path), then MapBlockVolume: the
// published device (symlinks resolved) bind-mounted at
// <global map path>/<pod UID>, the pod's symlink to it, and a loop device
// on the bind mount.
func (m *Manager) mapBlock(ctx context.Context, s *spec, av *actualVolume, uid types.UID, dp desiredPod, drv *storagev1.CSIDriver, caps NodeCapabilities, device deviceState) error {
	stagingPath := BlockStagingPath(m.rootDir, s.specName)
	if device != deviceStaged {
		if err := m.stage(ctx, s, av, stagingPath, drv, caps, nil); err != nil {
			return m.failed(dp.pod, s, "MapVolume.SetUpDevice failed", err)
		}
	}
	if !caps.StageUnstage && !caps.Plugin {
		stagingPath = ""
	}
	if err := m.publish(ctx, s, av, uid, dp, drv, stagingPath, caps, nil); err != nil {
		return m.failed(dp.pod, s, "MapVolume.MapPodDevice failed", err)
	}
	// From here on the pod volume stays "maybe published" until mapped.
	m.mu.Lock()
	ap := av.pods[uid]
	ap.uncertain = true
	m.mu.Unlock()
	publishPath := BlockPublishPath(m.rootDir, uid, s.specName)
	devicePath, err := m.blk.EvalHostSymlinks(publishPath)
	if err != nil {
		return m.failed(dp.pod, s, "MapVolume.EvalHostSymlinks failed", err)
	}
	globalMapPath := BlockGlobalMapPath(m.rootDir, s.specName)
	if err := m.blk.MapDevice(devicePath, globalMapPath, string(uid), true); err != nil {
		return m.failed(dp.pod, s, "MapVolume.MapBlockVolume failed", fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, globalMapPath:%s, podUID: %s, bindMount: %v: %v", devicePath, globalMapPath, uid, true, err))
	}
	podMapDir := podDeviceMapDir(m.rootDir, uid)
	if err := m.blk.MapDevice(devicePath, podMapDir, s.specName, false); err != nil {
		return m.failed(dp.pod, s, "MapVolume.MapBlockVolume failed", fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, podVolumeMapPath:%s, volumeMapName: %s, bindMount: %v: %v", devicePath, podMapDir, s.specName, false, err))
	}
	if _, err := m.blk.AttachFileDevice(filepath.Join(globalMapPath, string(uid))); err != nil {
		return m.failed(dp.pod, s, "MapVolume.MapBlockVolume failed", fmt.Errorf("blkUtil.AttachFileDevice failed. globalMapPath:%s, podUID: %s: %v", globalMapPath, uid, err))
	}
	m.mu.Lock()
	ap.uncertain = false
	m.mu.Unlock()
	logr.FromContextOrDiscard(ctx).V(2).Info("MapVolume.MapPodDevice succeeded", "volume", s.specName, "uniqueName", s.name, "pod", dp.pod.Namespace+"/"+dp.pod.Name)
	return nil
}

// unmapBlock is kubelet's UnmapVolume: UnmapBlockVolume (the loop device
// detached, the pod's symlink removed, the global bind mount unmounted and
// its file removed), then UnmapPodDevice (NodeUnpublishVolume).
func (m *Manager) unmapBlock(ctx context.Context, ref podVolumeRef, driver, handle string, ap actualPod) error {
	globalMapPath := BlockGlobalMapPath(m.rootDir, ap.specName)
	fail := func(op string, err error) error {
		return fmt.Errorf("%s failed for volume %q (UniqueName: %q) pod %q: %w", op, ap.specName, ref.name, ref.uid, err)
	}
	if err := m.blk.DetachFileDevice(filepath.Join(globalMapPath, string(ref.uid))); err != nil {
		return fail("UnmapVolume.UnmapBlockVolume", fmt.Errorf("blkUtil.DetachFileDevice failed. globalUnmapPath:%s, podUID: %s: %v", globalMapPath, ref.uid, err))
	}
	if err := m.blk.UnmapDevice(podDeviceMapDir(m.rootDir, ref.uid), ap.specName, false); err != nil {
		return fail("UnmapVolume.UnmapBlockVolume", err)
	}
	if err := m.blk.UnmapDevice(globalMapPath, string(ref.uid), true); err != nil {
		return fail("UnmapVolume.UnmapBlockVolume", err)
	}
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	if err := m.node.Unpublish(cctx, UnpublishRequest{Driver: driver, VolumeHandle: handle, TargetPath: ap.targetPath, PodUID: ref.uid, SpecName: ap.specName, Block: true}); err != nil {
		return fail("UnmapVolume.UnmapPodDevice", err)
	}
	if err := m.checkUnmounted(ap.targetPath); err != nil {
		return fail("UnmapVolume.UnmapPodDevice", err)
	}
	// kubelet leaves the pod's emptied volumeDevices directories to the
	// pod's cleanup; remove them when empty, so nothing is left.
	for _, dir := range []string{podDeviceMapDir(m.rootDir, ref.uid), filepath.Dir(podDeviceMapDir(m.rootDir, ref.uid))} {
		_ = os.Remove(dir)
	}
	return nil
}

// unmapDevice is kubelet's UnmapDevice for a block volume no pod uses:
// refused while a pod's bind mount is left in the global map directory;
// TearDownDevice (NodeUnstageVolume, the plugin's directories removed);
// the global map directory removed.
func (m *Manager) unmapDevice(ctx context.Context, name corev1.UniqueVolumeName, driver, handle, specName string) error {
	globalMapPath := BlockGlobalMapPath(m.rootDir, specName)
	entries, err := os.ReadDir(globalMapPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("UnmapDevice.GetDeviceBindMountRefs check failed for volume %q: %w", name, err)
	}
	var refs []string
	for _, e := range entries {
		if e.Type()&os.ModeDevice != 0 {
			refs = append(refs, filepath.Join(globalMapPath, e.Name()))
		}
	}
	if len(refs) > 0 {
		return fmt.Errorf("UnmapDevice failed for volume %q: the device %q is still referenced from other Pods %v", name, globalMapPath, refs)
	}
	cctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	caps, err := m.node.Capabilities(cctx, driver)
	if err != nil {
		return fmt.Errorf("UnmapDevice.TearDownDevice failed for volume %q: %w", name, err)
	}
	stagingPath := BlockStagingPath(m.rootDir, specName)
	// Without STAGE_UNSTAGE_VOLUME (and over a NodeVolumes that says so)
	// kubelet skips unstageVolumeForBlock.
	if caps.StageUnstage || caps.Plugin {
		if err := m.node.Unstage(cctx, UnstageRequest{Driver: driver, VolumeHandle: handle, StagingPath: stagingPath, Block: true, SpecName: specName}); err != nil {
			return fmt.Errorf("UnmapDevice.TearDownDevice failed for volume %q: %w", name, err)
		}
	}
	if err := m.checkUnmounted(stagingPath); err != nil {
		return fmt.Errorf("UnmapDevice.TearDownDevice failed for volume %q: %w", name, err)
	}
	// RemoveMapPath: only what is not mounted (kubelet: RemoveAll).
	for _, e := range entries {
		_ = os.Remove(filepath.Join(globalMapPath, e.Name()))
	}
	if err := os.Remove(globalMapPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("UnmapDevice.RemoveMapPath failed for volume %q: %w", name, err)
	}
	_ = os.Remove(filepath.Dir(globalMapPath)) // the volume's plugin dir, when empty
	return nil
}

// DeviceOptions gives a container the block volumes it uses (kubelet's
// makeBlockVolumes): for each volumeDevice, the CRI Device with the pod's
// symlink to the mapped device as host path, the volumeDevice's
// devicePath in the container, permissions "mrw" ("r" for a read-only
// claim). A volumeDevice whose volume is not mapped is an error matching
// ErrNotPublished, never left out. With it the Manager is a
// podsync.Devices (podsync.JoinDevices puts it after the device and DRA
// managers, as kubelet appends block volumes to their devices).
func (m *Manager) DeviceOptions(_ context.Context, pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
	if pod == nil || c == nil || len(c.VolumeDevices) == 0 {
		return criconfig.DeviceOptions{}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[pod.UID]
	var out criconfig.DeviceOptions
	for _, d := range c.VolumeDevices {
		if !filepath.IsAbs(d.DevicePath) {
			return criconfig.DeviceOptions{}, fmt.Errorf("error DevicePath `%s` must be an absolute path", d.DevicePath)
		}
		var name corev1.UniqueVolumeName
		if ps != nil {
			name = ps.volumes[d.Name]
		}
		av, dv := m.actual[name], m.desired[name]
		if name == "" || av == nil || dv == nil || !av.block || !av.mountedFor(pod.UID) || dv.pods[pod.UID] == nil {
			return criconfig.DeviceOptions{}, fmt.Errorf("cannot find volume %q to pass into container %q: %w", d.Name, c.Name, ErrNotPublished)
		}
		perm := "mrw"
		if dv.pods[pod.UID].readOnly {
			perm = "r"
		}
		out.Devices = append(out.Devices, &runtimeapi.Device{
			ContainerPath: d.DevicePath,
			HostPath:      PodDeviceMapPath(m.rootDir, pod.UID, av.pods[pod.UID].specName),
			Permissions:   perm,
		})
	}
	return out, nil
}

// mapped says whether the pod's volume outer is a block volume
// mapped for it.
func (m *Manager) mapped(uid types.UID, outer string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[uid]
	if ps == nil {
		return false
	}
	av := m.actual[ps.volumes[outer]]
	return av != nil && av.block && av.mountedFor(uid)
}

// reconstructBlock finds block volumes under the plugin's volumeDevices
// directory: each <specName>/data/vol_data.json is a volume that may be
// staged, and each pod found in its publish directory, its global map
// directory or a pod's volumeDevices directory a pod volume that may be
// mapped. Kubelet reconstructs from the pods' symlinks only.
func (m *Manager) reconstructBlock(ctx context.Context) []error {
	base := blockDir(m.rootDir)
	specs, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	podsOf := m.blockPodsFromPodDirs()
	var errs []error
	for _, e := range specs {
		specName := e.Name()
		if !e.IsDir() || specName == "staging" || specName == "publish" {
			continue
		}
		dataDir := blockDataDir(m.rootDir, specName)
		data, err := readVolData(dataDir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reconstruct %s: %w", dataDir, err))
			continue
		}
		driver, handle := data[keyDriverName], data[keyVolumeHandle]
		if data[keySpecVolID] != specName || handle == "" {
			errs = append(errs, fmt.Errorf("reconstruct %s: vol_data.json does not match its path: %w", dataDir, ErrInvalidName))
			continue
		}
		if err := CheckDriverName(driver); err != nil {
			errs = append(errs, fmt.Errorf("reconstruct %s: %w", dataDir, err))
			continue
		}
		uids := map[types.UID]bool{}
		for _, dir := range []string{filepath.Join(base, "publish", specName), BlockGlobalMapPath(m.rootDir, specName)} {
			entries, _ := os.ReadDir(dir)
			for _, p := range entries {
				if checkSegment("pod UID", p.Name()) == nil {
					uids[types.UID(p.Name())] = true
				}
			}
		}
		for _, uid := range podsOf[specName] {
			uids[uid] = true
		}
		name := UniqueVolumeName(driver, handle)
		attachable := m.attachRequired(ctx, driver)
		m.mu.Lock()
		av := m.actual[name]
		if av == nil {
			av = &actualVolume{
				name: name, driver: driver, handle: handle, attachable: attachable, attached: true, block: true,
				device: deviceUncertain, stagingPath: BlockStagingPath(m.rootDir, specName),
				pods: map[types.UID]*actualPod{},
			}
			m.actual[name] = av
		}
		for uid := range uids {
			if av.pods[uid] == nil {
				av.pods[uid] = &actualPod{specName: specName, targetPath: BlockPublishPath(m.rootDir, uid, specName), uncertain: true}
			}
		}
		m.mu.Unlock()
	}
	return errs
}

// blockPodsFromPodDirs lists, by spec name, the pods with an entry in
// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi (kubelet's
// reconstruction source for block volumes).
func (m *Manager) blockPodsFromPodDirs() map[string][]types.UID {
	out := map[string][]types.UID{}
	pods, _ := os.ReadDir(filepath.Join(m.rootDir, "pods"))
	for _, p := range pods {
		if !p.IsDir() || checkSegment("pod UID", p.Name()) != nil {
			continue
		}
		uid := types.UID(p.Name())
		entries, _ := os.ReadDir(podDeviceMapDir(m.rootDir, uid))
		for _, e := range entries {
			out[e.Name()] = append(out[e.Name()], uid)
		}
	}
	return out
}
