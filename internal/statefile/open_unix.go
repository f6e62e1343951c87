//go:build unix

package statefile

import (
	"errors"
	"os"
	"syscall"
)

// open opens path for reading without following a final symlink and
// without blocking on a FIFO or device.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// isSymlinkErr: O_NOFOLLOW met a symlink (ELOOP on Linux and the BSDs;
// EMLINK on FreeBSD and DragonFly, EFTYPE on NetBSD).
func isSymlinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
