//go:build !linux

package eviction

import "errors"

func statfs(string) (FsUsage, error) {
	return FsUsage{}, errors.New("statfs: not supported on this platform")
}
