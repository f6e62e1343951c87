package eviction

import "golang.org/x/sys/unix"

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
