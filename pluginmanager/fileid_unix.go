//go:build unix

package pluginmanager

import (
	"io/fs"
	"syscall"
)

func idOf(fi fs.FileInfo) fileID {
	id := fileID{mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return id
}
