package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/stats"
)

// VolumeStatter is an optional ability of a NodeVolumes: measuring a
// volume published at targetPath (kubelet's metricsCsi, NodeGetVolumeStats).
// An error matching stats.ErrVolumeMetricsNotSupported means the driver
// cannot (no GET_VOLUME_STATS capability). CSI(plugin) has it.
type VolumeStatter interface {
	VolumeStats(ctx context.Context, driver, volumeHandle, targetPath string) (stats.VolumeMetrics, error)
}

// VolumePods are the pods the manager knows, for a stats.VolumeAnalyzer
// (the Manager is a stats.VolumeSource).
func (m *Manager) VolumePods() []*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(m.pods))
	for _, ps := range m.pods {
		out = append(out, ps.pod)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

// MountedVolumes lists the volumes published for the pod by the pod's
// names for them (kubelet's ListVolumesForPod, for the volumes the
// manager serves; volumes maybe published, as after a restart, are not
// listed, as kubelet's reconstructed volumes without a mounter): each
// measured through the NodeVolumes' VolumeStats, or not supported
// without it. False when there are none.
func (m *Manager) MountedVolumes(uid types.UID) ([]stats.MountedVolume, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[uid]
	if ps == nil {
		return nil, false
	}
	statter, _ := m.node.(VolumeStatter)
	var out []stats.MountedVolume
	for outer, name := range ps.volumes {
		av, dv := m.actual[name], m.desired[name]
		if av == nil || dv == nil || !av.mountedFor(uid) || dv.pods[uid] == nil {
			continue
		}
		driver, handle, target := av.driver, av.handle, av.pods[uid].targetPath
		if av.block {
			// kubelet's block mapper measures the pod's bind mount of
			// the device in the global map path.
			target = filepath.Join(BlockGlobalMapPath(m.rootDir, av.pods[uid].specName), string(uid))
		}
		out = append(out, stats.MountedVolume{Name: outer, Metrics: func(ctx context.Context) (stats.VolumeMetrics, error) {
			if statter == nil {
				return stats.VolumeMetrics{}, fmt.Errorf("%w: the volume manager's NodeVolumes cannot measure volumes", stats.ErrVolumeMetricsNotSupported)
			}
			return statter.VolumeStats(ctx, driver, handle, target)
		}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, len(out) > 0
}

// VolumeStats is csi's Plugin.VolumeStats (kubelet's metricsCsi).
func (c csiVolumes) VolumeStats(ctx context.Context, driver, volumeHandle, targetPath string) (stats.VolumeMetrics, error) {
	s, err := c.p.VolumeStats(ctx, driver, volumeHandle, targetPath)
	if errors.Is(err, csi.ErrNotSupported) {
		return stats.VolumeMetrics{}, fmt.Errorf("%w: %w", stats.ErrVolumeMetricsNotSupported, err)
	}
	if err != nil {
		return stats.VolumeMetrics{}, err
	}
	return stats.VolumeMetrics{AvailableBytes: s.Available, CapacityBytes: s.Capacity, UsedBytes: s.Used,
		Inodes: s.Inodes, InodesFree: s.InodesFree, InodesUsed: s.InodesUsed}, nil
}
