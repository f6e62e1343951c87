package hostinfo

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FSCapacity is the size in bytes of the filesystem that holds dir (or
// would: its nearest existing parent), blocks times fragment size as
// cAdvisor reads it; 0 when none can be read.
func FSCapacity(dir string) int64 {
	dir = filepath.Clean(dir)
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil {
			return int64(st.Blocks) * st.Frsize
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0
		}
		dir = parent
	}
}
