package mounts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// there.
func MakeVolumeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm() != 0o777 {
		return os.Chmod(dir, 0o777)
	}
	return nil
}
