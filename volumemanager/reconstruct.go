package volumemanager

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxVolData bounds what is read of a vol_data.json.
const maxVolData = 64 << 10

// reconstruct is kubelet's reconstructVolumes for the CSI plugin: every
// <root>/pods/<uid>/volumes/kubernetes.io~csi/<name> with a valid
// vol_data.json becomes a pod volume that may be published (uncertain),
// and its volume maybe staged; in addition (beyond kubelet) every
// <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/vol_data.json
// becomes a volume that may be staged, so a volume staged by an agent
// killed before it published is unstaged if no pod wants it. The
// reconciler then publishes again what pods still want (CSI calls are
// idempotent: the same target, mounted once) and unpublishes and unstages
// the rest once the sources are ready. Entries that are not valid (a pod
// directory that is not a UID, a vol_data.json that does not match its
// path) are left alone and reported in the error.
func (m *Manager) reconstruct(ctx context.Context) error {
	var errs []error
	podsDir := filepath.Join(m.rootDir, "pods")
	pods, err := os.ReadDir(podsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, p := range pods {
		if !p.IsDir() {
			continue
		}
		uid := types.UID(p.Name())
		if err := checkSegment("pod UID", string(uid)); err != nil {
			errs = append(errs, err)
			continue
		}
		dir := filepath.Join(podsDir, p.Name(), "volumes", podPluginDir)
		vols, err := os.ReadDir(dir)
		if err != nil {
			continue // no CSI volume
		}
		for _, v := range vols {
			if err := m.reconstructPodVolume(ctx, uid, filepath.Join(dir, v.Name()), v.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, m.reconstructStaged(ctx)...)
	errs = append(errs, m.reconstructBlock(ctx)...)
	return errors.Join(errs...)
}

func (m *Manager) reconstructPodVolume(ctx context.Context, uid types.UID, dir, specName string) error {
	data, err := readVolData(dir)
	if err != nil {
		return fmt.Errorf("reconstruct %s: %w", dir, err)
	}
	driver, handle := data[keyDriverName], data[keyVolumeHandle]
	if data[keySpecVolID] != specName {
		return fmt.Errorf("reconstruct %s: vol_data.json names volume %q: %w", dir, data[keySpecVolID], ErrInvalidName)
	}
	if err := CheckDriverName(driver); err != nil {
		return fmt.Errorf("reconstruct %s: %w", dir, err)
	}
	if handle == "" {
		return fmt.Errorf("reconstruct %s: vol_data.json has no volume handle", dir)
	}
	inline := storagev1.VolumeLifecycleMode(data[keyLifecycleMode]) == storagev1.VolumeLifecycleEphemeral
	name := UniqueVolumeName(driver, handle)
	if inline {
		name = InlineVolumeName(uid, specName)
		if handle != InlineVolumeHandle(uid, specName) {
			return fmt.Errorf("reconstruct %s: inline volume handle does not match its pod and name: %w", dir, ErrInvalidName)
		}
	}
	attachable := !inline && m.attachRequired(ctx, driver)
	m.mu.Lock()
	defer m.mu.Unlock()
	av := m.actual[name]
	if av == nil {
		av = &actualVolume{name: name, driver: driver, handle: handle, inline: inline, attachable: attachable, attached: true, pods: map[types.UID]*actualPod{}}
		if !inline {
			// Maybe staged (kubelet's MarkDeviceAsUncertain): staged
			// again when wanted, unstaged when not.
			av.device, av.stagingPath = deviceUncertain, StagingPath(m.rootDir, driver, handle)
		}
		m.actual[name] = av
	}
	if av.pods[uid] == nil {
		av.pods[uid] = &actualPod{specName: specName, targetPath: filepath.Join(dir, "mount"), uncertain: true}
	}
	return nil
}

// reconstructStaged finds staged volumes under the CSI plugin's
// directory.
func (m *Manager) reconstructStaged(ctx context.Context) []error {
	var errs []error
	base := filepath.Join(m.rootDir, "plugins", PluginName)
	drivers, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	for _, d := range drivers {
		if !d.IsDir() || d.Name() == volumeDevicesDir || CheckDriverName(d.Name()) != nil {
			continue
		}
		vols, err := os.ReadDir(filepath.Join(base, d.Name()))
		if err != nil {
			continue
		}
		for _, v := range vols {
			dir := filepath.Join(base, d.Name(), v.Name())
			data, err := readVolData(dir)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("reconstruct %s: %w", dir, err))
				continue
			}
			driver, handle := data[keyDriverName], data[keyVolumeHandle]
			if driver != d.Name() || handle == "" || fmt.Sprintf("%x", sha256.Sum256([]byte(handle))) != v.Name() {
				errs = append(errs, fmt.Errorf("reconstruct %s: vol_data.json does not match its path: %w", dir, ErrInvalidName))
				continue
			}
			name := UniqueVolumeName(driver, handle)
			attachable := m.attachRequired(ctx, driver)
			m.mu.Lock()
			if m.actual[name] == nil {
				m.actual[name] = &actualVolume{
					name: name, driver: driver, handle: handle, attachable: attachable, attached: true,
					device: deviceUncertain, stagingPath: StagingPath(m.rootDir, driver, handle),
					pods: map[types.UID]*actualPod{},
				}
			}
			m.mu.Unlock()
		}
	}
	return errs
}

// attachRequired: the CSIDriver does not say attachRequired: false (an
// unknown driver counts as attachable, which keeps it in volumesInUse).
func (m *Manager) attachRequired(ctx context.Context, driver string) bool {
	drv, err := m.csiDriver(ctx, driver)
	if err != nil || drv == nil {
		return true
	}
	return drv.Spec.AttachRequired == nil || *drv.Spec.AttachRequired
}

func readVolData(dir string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dir, volDataFileName))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxVolData+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxVolData {
		return nil, fmt.Errorf("%s is larger than %d bytes", volDataFileName, maxVolData)
	}
	data := map[string]string{}
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("failed to parse volume data file: %v", err)
	}
	return data, nil
}
