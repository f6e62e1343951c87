package volumemanager

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// BlockPathHandler is kubelet's volumepathhandler, the part the manager
// uses to map a block volume for a pod once the driver has published it:
// the device bind-mounted in the volume's global map directory, a symlink
// to it in the pod's directory, and a loop device on the bind mount that
// holds the device open while the pod uses it. HostBlockPaths is the
// host's; tests use a fake.
type BlockPathHandler interface {
	// MapDevice makes mapPath (0750) and in it linkName: with bindMount a
	// file on which devicePath is bind-mounted (nothing done when it is
	// already a device), else a symlink to devicePath (replacing one).
	MapDevice(devicePath, mapPath, linkName string, bindMount bool) error
	// UnmapDevice undoes MapDevice: unmounts the bind mount and removes
	// the file, or removes the symlink. Nothing there is no error.
	UnmapDevice(mapPath, linkName string, bindMount bool) error
	// AttachFileDevice makes a loop device backed by path, unless one
	// exists, and returns it.
	AttachFileDevice(path string) (string, error)
	// DetachFileDevice removes the loop device backed by path, if any.
	DetachFileDevice(path string) error
	// EvalHostSymlinks resolves the symlinks of path.
	EvalHostSymlinks(path string) (string, error)
}

// HostBlockPaths is BlockPathHandler on the host, as kubelet's
// VolumePathHandler: bind mounts with mount(2), loop devices with
// losetup(8) (-f to attach, -d to detach) found through
// /sys/block/loop*/loop/backing_file. Needs root.
type HostBlockPaths struct{}

var _ BlockPathHandler = HostBlockPaths{}

// MapDevice implements BlockPathHandler.
func (HostBlockPaths) MapDevice(devicePath, mapPath, linkName string, bindMount bool) error {
	if devicePath == "" {
		return errors.New("failed to map device to map path. devicePath is empty")
	}
	if mapPath == "" {
		return errors.New("failed to map device to map path. mapPath is empty")
	}
	if !filepath.IsAbs(mapPath) {
		return fmt.Errorf("the map path should be absolute: map path: %s", mapPath)
	}
	if err := os.MkdirAll(mapPath, 0o750); err != nil {
		return fmt.Errorf("failed to mkdir %s: %v", mapPath, err)
	}
	linkPath := filepath.Join(mapPath, linkName)
	if !bindMount {
		if err := os.Remove(linkPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to remove file %s: %v", linkPath, err)
		}
		return os.Symlink(devicePath, linkPath)
	}
	fi, err := os.Stat(linkPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := os.OpenFile(linkPath, os.O_CREATE|os.O_RDWR, 0o750)
		if err != nil {
			return fmt.Errorf("failed to open file %s: %v", linkPath, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("failed to close file %s: %v", linkPath, err)
		}
	case err != nil:
		return fmt.Errorf("failed to stat file %s: %v", linkPath, err)
	case fi.Mode()&os.ModeDevice != 0:
		return nil // already mapped
	}
	if err := unix.Mount(devicePath, linkPath, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("failed to bind mount devicePath: %s to linkPath %s: %v", devicePath, linkPath, err)
	}
	return nil
}

// UnmapDevice implements BlockPathHandler.
func (HostBlockPaths) UnmapDevice(mapPath, linkName string, bindMount bool) error {
	if mapPath == "" {
		return errors.New("failed to unmap device from map path. mapPath is empty")
	}
	linkPath := filepath.Join(mapPath, linkName)
	fi, err := os.Lstat(linkPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to Lstat file %s: %v", linkPath, err)
	}
	if !bindMount {
		if fi.Mode()&os.ModeSymlink == 0 {
			return nil // kubelet leaves what is not its symlink
		}
		return os.Remove(linkPath)
	}
	if fi.Mode()&os.ModeDevice != 0 {
		if err := unix.Unmount(linkPath, 0); err != nil {
			return fmt.Errorf("failed to unmount linkPath %s: %v", linkPath, err)
		}
	}
	if err := os.Remove(linkPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove file %s: %v", linkPath, err)
	}
	return nil
}

// AttachFileDevice implements BlockPathHandler.
func (h HostBlockPaths) AttachFileDevice(path string) (string, error) {
	dev, err := loopDevice(path)
	if err != nil && !errors.Is(err, errLoopNotFound) {
		return "", fmt.Errorf("GetLoopDevice failed for path %s: %v", path, err)
	}
	if dev != "" {
		return dev, nil
	}
	if out, err := exec.Command("losetup", "-f", path).CombinedOutput(); err != nil {
		return "", fmt.Errorf("makeLoopDevice failed for path %s: losetup -f %s failed: %v: %s", path, path, err, bytes.TrimSpace(out))
	}
	dev, err = loopDevice(path)
	if err != nil {
		return "", fmt.Errorf("makeLoopDevice failed for path %s: %v", path, err)
	}
	return dev, nil
}

// DetachFileDevice implements BlockPathHandler.
func (HostBlockPaths) DetachFileDevice(path string) error {
	dev, err := loopDevice(path)
	if errors.Is(err, errLoopNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("GetLoopDevice failed for path %s: %v", path, err)
	}
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		if _, serr := os.Stat(dev); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("removeLoopDevice failed for path %s: losetup -d %s failed: %v: %s", path, dev, err, bytes.TrimSpace(out))
	}
	return nil
}

// EvalHostSymlinks implements BlockPathHandler.
func (HostBlockPaths) EvalHostSymlinks(path string) (string, error) {
	return filepath.EvalSymlinks(path)
}

var errLoopNotFound = errors.New("device not found")

// loopDevice is kubelet's GetLoopDevice: the /dev/loopN whose backing
// file is path (or its real path).
func loopDevice(path string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", errLoopNotFound
	} else if err != nil {
		return "", fmt.Errorf("not attachable: %v", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("failed to evaluate path %s: %s", path, err)
	}
	devices, err := filepath.Glob("/sys/block/loop*")
	if err != nil {
		return "", err
	}
	for _, d := range devices {
		b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue
		}
		backing := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(b)), "(deleted)"))
		if backing == path || backing == real {
			return "/dev/" + filepath.Base(d), nil
		}
	}
	return "", errLoopNotFound
}
