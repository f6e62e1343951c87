//go:build !unix

package credentials

import "os"

func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }

// inode is 0 where the platform has none to offer.
func inode(os.FileInfo) uint64 { return 0 }
