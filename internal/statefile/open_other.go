//go:build !unix

package statefile

import "os"

// open: without O_NOFOLLOW and O_NONBLOCK, a symlink is refused by Lstat
// first; the fstat check after opening still refuses anything else.
func open(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.Open(path)
}

var errSymlink = &os.PathError{Op: "open", Err: os.ErrInvalid}

func isSymlinkErr(err error) bool { return err == errSymlink }
