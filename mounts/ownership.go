package mounts

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Kubelet's masks for SetVolumeOwnership (pkg/volume/volume_linux.go).
const (
	rwMask   = fs.FileMode(0o660)
	roMask   = fs.FileMode(0o440)
	execMask = fs.FileMode(0o110)
)

// SetVolumeOwnership is kubelet's SetVolumeOwnership with
// fsGroupChangePolicy Always (what emptyDir, Secret, ConfigMap, downward
// API and projected volumes use): every file, directory and link of the
// volume gets fsGroup as its group; files and directories get group read
// (and write, unless the volume is read-only), directories group execute
// and setgid so that files created later inherit the group. Links keep
// their mode: a chmod would reach their target.
//
// Unlike kubelet, which logs a failed chown or chmod and goes on, the
// first failure is returned: a pod that asked for fsGroup does not run
// without it.
func SetVolumeOwnership(dir string, fsGroup int64, readOnly bool) error {
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if d.IsDir() {
			m |= fs.ModeSetgid | execMask
		}
		return os.Chmod(p, info.Mode()|m)
	})
}

// MakeVolumeDir is kubelet's emptyDir setupDir: the volume's directory,
// made with mode 0777 whatever the umask (a container of any user may
// write an emptyDir), and refused if something other than a directory is
// there. dir must be beneath root (the kubelet root directory), and every
// directory from root down to dir is opened without following a symlink
// (ErrUnsafeVolumeDir): a pod's volume is never made, nor chmod-ed 0777,
// outside its root.
func MakeVolumeDir(root, dir string) error {
	if root == "" {
		root = "."
	}
	rel, err := relBeneath(root, dir)
	if err != nil {
		return err
	}
	// The root is trusted: made if missing, as on an agent's first start.
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	pathFd, err := openVolumeDir(root, rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(pathFd)
	// An O_PATH descriptor takes no fchmod: open the directory itself.
	fd, err := unix.Openat(pathFd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Mode&0o777 != 0o777 {
		if err := unix.Fchmod(fd, 0o777); err != nil {
			return &os.PathError{Op: "chmod", Path: dir, Err: err}
		}
	}
	return nil
}
