package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/mounts"
)

// ErrVolumeNotSupported: the default volume provider cannot mount a volume
// of this type; callers with a volume manager supply their own provider.
var ErrVolumeNotSupported = errors.New("volume type not supported by the default provider")

// VolumeProvider gives the pod's volumes as mounted on the host.
type VolumeProvider interface {
	Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error)
}

// DefaultVolumes resolves hostPath volumes (creating DirectoryOrCreate and
// FileOrCreate ones, checking the type of the others) and emptyDir volumes
// (a directory under the pod's directory, as kubelet's
// volumes/kubernetes.io~empty-dir/<name>). Any other type is
// ErrVolumeNotSupported.
type DefaultVolumes struct {
	// RootDir is kubelet's root dir; pods live in <RootDir>/pods/<uid>.
	RootDir string
}

// Volumes implements VolumeProvider.
func (d DefaultVolumes) Volumes(ctx context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	out := mounts.VolumeMap{}
	for _, v := range pod.Spec.Volumes {
		m, err := d.Volume(ctx, pod, v)
		if err != nil {
			return nil, err
		}
		out[v.Name] = m
	}
	return out, nil
}

// Volume resolves one of the pod's volumes, so that a provider serving
// other types (Secret, ConfigMap, CSI) can hand hostPath and emptyDir
// here one by one. Any other type is ErrVolumeNotSupported.
func (d DefaultVolumes) Volume(_ context.Context, pod *corev1.Pod, v corev1.Volume) (mounts.Volume, error) {
	switch {
	case v.HostPath != nil:
		if err := checkHostPath(v.HostPath); err != nil {
			return mounts.Volume{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		return mounts.Volume{HostPath: v.HostPath.Path}, nil
	case v.EmptyDir != nil:
		if v.EmptyDir.Medium != corev1.StorageMediumDefault {
			// kubelet mounts a tmpfs or huge pages here; a disk
			// directory would silently be something else.
			return mounts.Volume{}, fmt.Errorf("volume %q: emptyDir.medium %q: %w (only the default medium is)", v.Name, v.EmptyDir.Medium, ErrVolumeNotSupported)
		}
		dir := filepath.Join(PodDir(d.RootDir, pod), "volumes", "kubernetes.io~empty-dir", v.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return mounts.Volume{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		// kubelet makes emptyDir world-writable, whatever the umask.
		if err := os.Chmod(dir, 0o777); err != nil {
			return mounts.Volume{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
			if err := mounts.SetVolumeOwnership(dir, *sc.FSGroup, false); err != nil {
				return mounts.Volume{}, fmt.Errorf("volume %q: fsGroup %d: %w", v.Name, *sc.FSGroup, err)
			}
		}
		return mounts.Volume{HostPath: dir, SELinuxRelabel: true}, nil
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
