package stats

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// statfs measures the filesystem holding path as cAdvisor does: bytes by
// the fragment size, available to unprivileged users.
func statfs(path string) (FsUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsUsage{}, err
	}
	bs := uint64(st.Frsize)
	return FsUsage{
		CapacityBytes: st.Blocks * bs, AvailableBytes: st.Bavail * bs,
		Inodes: st.Files, InodesFree: st.Ffree,
	}, nil
}

// diskUsage is the space a file takes on disk, as du counts it (512-byte
// blocks), kubelet's volume.NewMetricsDu; its size when the blocks are not
// known.
func diskUsage(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(fi.Size())
}
