//go:build !linux

package imagegc

import "errors"

func statfs(string) (uint64, uint64, error) {
	return 0, 0, errors.New("statfs is only implemented on Linux; pass a Filesystem with WithFilesystem")
}
