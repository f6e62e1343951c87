package nodestatus

import "golang.org/x/sys/unix"

// fsCapacity is the size in bytes of the filesystem holding path (0 if it
// cannot be read), as cAdvisor's RootFsInfo reports it.
func fsCapacity(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}
