//go:build !unix

package pluginmanager

import "io/fs"

// idOf has only the modification time where there are no inode numbers.
func idOf(fi fs.FileInfo) fileID { return fileID{mtime: fi.ModTime().UnixNano()} }
