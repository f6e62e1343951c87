package eviction

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestPersistentVolumesNotEphemeral: the volume stats of PVCs, generic
// ephemeral and CSI inline volumes (stats.WithVolumeStats lists them
// beside the local ones) count neither in a pod's disk usage for the
// ranking nor in its local storage limits, as kubelet (localVolumeNames,
// emptyDirLimitEviction; the Summary's ephemeralStorage leaves them out).
func TestPersistentVolumesNotEphemeral(t *testing.T) {
	t.Parallel()
	size := resource.MustParse("100Mi")
	pod := newPod("db", 0, []corev1.Container{container("c", nil, resources("", "", "200Mi"))}, []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		{Name: "inline", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}},
	})
	vs := func(name string, mi uint64, pvc string) statsapi.VolumeStats {
		v := statsapi.VolumeStats{Name: name, FsStats: statsapi.FsStats{UsedBytes: u64(mi << 20), InodesUsed: u64(mi)}}
		if pvc != "" {
			v.PVCRef = &statsapi.PVCReference{Name: pvc, Namespace: pod.Namespace}
		}
		return v
	}
	s := statsapi.PodStats{
		VolumeStats: []statsapi.VolumeStats{vs("scratch", 10, ""), vs("data", 1024, "data"), vs("eph", 2048, "db-eph"), vs("inline", 4096, "")},
		// stats' ephemeral storage: the container's 40Mi and scratch's 10Mi.
		EphemeralStorage: &statsapi.FsStats{UsedBytes: u64(50 << 20)},
		Containers:       []statsapi.ContainerStats{{Name: "c", Rootfs: &statsapi.FsStats{UsedBytes: u64(30 << 20)}, Logs: &statsapi.FsStats{UsedBytes: u64(10 << 20)}}},
	}
	bytes, inodes := PodDiskUsage(s, pod, []FsStatsType{FsStatsRoot, FsStatsLogs, FsStatsLocalVolumeSource})
	if bytes.Value() != 50<<20 || inodes.Value() != 10 {
		t.Errorf("disk usage %s bytes, %s inodes; want 50Mi and scratch's 10 inodes", bytes.String(), inodes.String())
	}
	if msg, over := StorageLimitExceeded(pod, s, DiskLayout{}); over {
		t.Errorf("evicted for its persistent volumes: %q", msg)
	}
}
