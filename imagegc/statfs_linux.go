package imagegc

import "golang.org/x/sys/unix"

func statfs(path string) (capacity, available uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Frsize), st.Bavail * uint64(st.Frsize), nil
}
