//go:build unix

package credentials

import (
	"os"
	"syscall"
)

// openNonBlocking opens a node file without blocking: a FIFO with no
// writer (or a device) must not hang the reader; the caller then refuses
// anything that is not a regular file.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// inode is the file's inode number.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
