package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/validation"
)

// Kubelet's emptyDir plugin directory under <pod dir>/volumes.
const emptyDirPluginDir = "kubernetes.io~empty-dir"

// ErrVolumeNotSupported: the default volume provider cannot mount a volume
// of this type; callers with a volume manager supply their own provider.
var ErrVolumeNotSupported = errors.New("volume type not supported by the default provider")

// VolumeProvider gives the pod's volumes as mounted on the host.
type VolumeProvider interface {
	Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error)
}

// VolumeRemounter is a VolumeProvider whose volumes must be set up again
// at every sync of a running pod, as kubelet's volume manager remounts the
// volumes whose plugin RequiresRemount (Secret, ConfigMap, downward API,
// projected) each time the pod is synced: their payload follows the API
// objects and the pod's own labels and annotations. SyncPod calls
// RemountVolumes at the end of a sync of a pod with a running container
// when no container start in that sync set up the volumes already (a
// start calls Volumes). It returns when the volumes' content next
// changes with time alone (zero: never), such as a service account
// token's renewal; SyncPod puts it in Result.RefreshAt and its error in
// Result.RemountError. apiobjects.Volumes is one; DefaultVolumes has no
// such volume.
type VolumeRemounter interface {
	VolumeProvider
	RemountVolumes(ctx context.Context, pod *corev1.Pod) (refreshAt time.Time, err error)
}

// DefaultVolumes resolves hostPath volumes (creating DirectoryOrCreate and
// FileOrCreate ones, checking the type of the others) and emptyDir volumes
// (a directory under the pod's directory, as kubelet's
// volumes/kubernetes.io~empty-dir/<name>; with medium Memory a tmpfs
// mounted there, sized by MemoryVolumeSize). Huge pages media and any
// other volume type are ErrVolumeNotSupported.
type DefaultVolumes struct {
	// RootDir is kubelet's root dir; pods live in <RootDir>/pods/<uid>.
	RootDir string
	// Mounter mounts emptyDir medium Memory volumes (nil: the host's,
	// mounts.HostMounter). Without the privilege to mount, such a volume
	// fails with mounts.ErrMountNotPermitted.
	Mounter mounts.Mounter
	// NodeAllocatable is the node's allocatable resources; its memory
	// bounds a Memory volume's size, as kubelet's node allocatable does.
	NodeAllocatable corev1.ResourceList
	// DiskBacked makes emptyDir medium Memory volumes plain directories
	// on the root dir's disk, with no size limit: weaker than kubelet
	// (what a pod keeps in memory reaches the disk), for callers that
	// cannot mount, such as unprivileged unit tests. Off by default.
	DiskBacked bool
}

// Volumes implements VolumeProvider. A pod the API server would refuse
// (validation.Check) is refused before anything is written.
func (d DefaultVolumes) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	if err := validation.Check(pod); err != nil {
		return nil, err
	}
	return d.checkedVolumes(pod)
}

// checkedVolumes is Volumes for a pod already checked.
func (d DefaultVolumes) checkedVolumes(pod *corev1.Pod) (mounts.VolumeMap, error) {
	out := mounts.VolumeMap{}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			continue // SyncPod pulls and adds it
		}
		m, err := d.volume(pod, v)
		if err != nil {
			return nil, err
		}
		out[v.Name] = m
	}
	return out, nil
}

// Volume resolves one of the pod's volumes, so that a provider serving
// other types (Secret, ConfigMap, CSI) can hand hostPath and emptyDir
// here one by one. Any other type is ErrVolumeNotSupported. An invalid
// pod or volume (validation.CheckVolume) is refused before anything is
// written.
func (d DefaultVolumes) Volume(_ context.Context, pod *corev1.Pod, v corev1.Volume) (mounts.Volume, error) {
	if err := validation.CheckVolume(pod, &v); err != nil {
		return mounts.Volume{}, err
	}
	return d.volume(pod, v)
}

// volume is Volume for a pod and volume already checked.
func (d DefaultVolumes) volume(pod *corev1.Pod, v corev1.Volume) (mounts.Volume, error) {
	switch {
	case v.HostPath != nil:
		if err := checkHostPath(v.HostPath); err != nil {
			return mounts.Volume{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		return mounts.Volume{HostPath: v.HostPath.Path}, nil
	case v.EmptyDir != nil:
		return d.emptyDir(pod, v)
	case v.Image != nil:
		// Its image is pulled by SyncPod, with the pod's other images; a
		// provider has nothing to set up.
		return mounts.Volume{}, fmt.Errorf("volume %q: an image volume is pulled and added by SyncPod, not resolved alone: %w", v.Name, ErrVolumeNotSupported)
	default:
		return mounts.Volume{}, fmt.Errorf("volume %q: %w (only hostPath and emptyDir are)", v.Name, ErrVolumeNotSupported)
	}
}

func checkHostPath(hp *corev1.HostPathVolumeSource) error {
	if hp.Path == "" {
		return errors.New("hostPath path is empty")
	}
	typ := corev1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	info, err := os.Stat(hp.Path)
	switch typ {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			return os.MkdirAll(hp.Path, 0o755)
		}
	case corev1.HostPathFileOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("hostPath %s: %w", hp.Path, err)
	}
	switch typ {
	case corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate:
		if !info.IsDir() {
			return fmt.Errorf("hostPath %s is not a directory", hp.Path)
		}
	case corev1.HostPathFile, corev1.HostPathFileOrCreate:
		if !info.Mode().IsRegular() {
			return fmt.Errorf("hostPath %s is not a file", hp.Path)
		}
	case corev1.HostPathSocket:
		if info.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("hostPath %s is not a socket", hp.Path)
		}
	}
	return nil
}

// emptyDir is kubelet's emptyDir plugin's SetUp: the directory 0777
// whatever the umask; for medium Memory a tmpfs mounted on it unless one
// already is (kubelet's setupTmpfs, so a second sync does not stack a
// second mount); then fsGroup ownership.
func (d DefaultVolumes) emptyDir(pod *corev1.Pod, v corev1.Volume) (mounts.Volume, error) {
	medium := v.EmptyDir.Medium
	if medium != corev1.StorageMediumDefault && medium != corev1.StorageMediumMemory {
		// kubelet mounts hugetlbfs for HugePages media; a directory would
		// silently be something else.
		return mounts.Volume{}, fmt.Errorf("volume %q: emptyDir.medium %q: %w (the default medium and Memory are)", v.Name, medium, ErrVolumeNotSupported)
	}
	dir := filepath.Join(PodDir(d.RootDir, pod), "volumes", emptyDirPluginDir, v.Name)
	if err := mounts.MakeVolumeDir(d.RootDir, dir); err != nil {
		return mounts.Volume{}, fmt.Errorf("volume %q: %w", v.Name, err)
	}
	if medium == corev1.StorageMediumMemory && !d.DiskBacked {
		size := MemoryVolumeSize(pod, d.NodeAllocatable, v.EmptyDir.SizeLimit)
		if err := EnsureTmpfs(d.mounter(), dir, size); err != nil {
			return mounts.Volume{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := mounts.SetVolumeOwnership(dir, *sc.FSGroup, false); err != nil {
			return mounts.Volume{}, fmt.Errorf("volume %q: fsGroup %d: %w", v.Name, *sc.FSGroup, err)
		}
	}
	return mounts.Volume{HostPath: dir, SELinuxRelabel: true}, nil
}

func (d DefaultVolumes) mounter() mounts.Mounter {
	if d.Mounter != nil {
		return d.Mounter
	}
	return hostMounter
}

// hostMounter is shared by the providers and Syncers given no Mounter, so
// that what it learns of the kernel (noswap) is learnt once.
var hostMounter = &mounts.HostMounter{}

// EnsureTmpfs mounts a tmpfs of size bytes (0: the kernel's default) at
// dir unless dir already is the root of a tmpfs: kubelet's setupTmpfs,
// idempotent, so a volume set up at every sync is mounted once. The caller
// has created dir. Providers of Secret-like volumes (apiobjects) share
// it.
func EnsureTmpfs(m mounts.Mounter, dir string, size int64) error {
	fsType, isMnt, err := m.MountPoint(dir)
	if err != nil {
		return err
	}
	if isMnt && fsType == mounts.FSTypeTmpfs {
		return nil
	}
	return m.MountTmpfs(dir, size)
}

// MemoryVolumeSize is kubelet's calculateEmptyDirMemorySize, the size of a
// memory-backed volume: the node's allocatable memory, lowered to the
// pod's memory limit (criconfig.PodMemoryLimit) and then to the volume's
// sizeLimit when they are positive and smaller. Kubelet always knows the
// node's allocatable memory; when nodeAllocatable has none, the pod's
// limit and sizeLimit bound the size alone, and 0 (the kernel's default,
// half the RAM) means no bound at all.
func MemoryVolumeSize(pod *corev1.Pod, nodeAllocatable corev1.ResourceList, sizeLimit *resource.Quantity) int64 {
	var size int64 // 0: unbounded
	if q, ok := nodeAllocatable[corev1.ResourceMemory]; ok {
		size = q.Value()
	}
	lower := func(v int64) {
		if v > 0 && (size <= 0 || v <= size) {
			size = v
		}
	}
	if _, ok := nodeAllocatable[corev1.ResourceMemory]; ok && size <= 0 {
		// kubelet's rule with a zero allocatable: nothing is smaller.
		return 0
	}
	if limit, ok := criconfig.PodMemoryLimit(pod); ok {
		lower(limit)
	}
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// remount sets up a running pod's volumes again when the provider is a
// VolumeRemounter (see there).
func (s *Syncer) remount(ctx context.Context, pod *corev1.Pod, result *Result) {
	r, ok := s.o.volumes.(VolumeRemounter)
	if !ok {
		return
	}
	result.RefreshAt, result.RemountError = r.RemountVolumes(ctx, pod)
	if result.RemountError != nil {
		logr.FromContextOrDiscard(ctx).V(2).Info("Failed to remount the pod's volumes", "pod", pod.Namespace+"/"+pod.Name, "err", result.RemountError)
	}
}

// hasRunningContainer: a container of the pod runs, so its volumes were
// set up.
func hasRunningContainer(status *PodStatus) bool {
	for _, cs := range status.ContainerStatuses {
		if cs.State == ContainerStateRunning {
			return true
		}
	}
	return false
}
