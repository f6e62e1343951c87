//go:build !linux

package stats

import (
	"errors"
	"os"
)

func statfs(string) (FsUsage, error) {
	return FsUsage{}, errors.New("statfs: not supported on this platform")
}

// diskUsage is a file's size outside Linux.
func diskUsage(fi os.FileInfo) uint64 { return uint64(fi.Size()) }
