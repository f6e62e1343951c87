package imagegc

import (
	"context"
	"fmt"
)

// Filesystem reports the size of the filesystem mounted at a path.
// Kubelet asks cAdvisor for the filesystem holding the mount point the
// runtime's ImageFsInfo names; Statfs is the same measurement without
// cAdvisor. A test or an operator with its own stats plugs in another.
type Filesystem interface {
	// Usage returns the capacity and the bytes available to unprivileged
	// users of the filesystem holding path. An error that matches
	// fs.ErrNotExist means the path is unknown on this node, which a pass
	// treats as kubelet treats a device cAdvisor does not know: capacity 0.
	Usage(ctx context.Context, path string) (capacity, available uint64, err error)
}

// Statfs is the default Filesystem: statfs(2) of the path, blocks and
// available blocks times the fragment size, as cAdvisor reads them.
type Statfs struct{}

// Usage implements Filesystem.
func (Statfs) Usage(_ context.Context, path string) (uint64, uint64, error) {
	capacity, available, err := statfs(path)
	if err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return capacity, available, nil
}
