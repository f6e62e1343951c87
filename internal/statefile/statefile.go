// Package statefile reads the small files podstart (or a kubelet sharing
// its directories) wrote earlier to remember state across restarts: image
// pull records, user-namespace records, applied resources.
//
// Such a file is read only if it is a regular file, and only up to a cap:
//
//   - it is opened with O_NOFOLLOW (a symlink in its place is not followed:
//     ErrNotRegular) and O_NONBLOCK (a FIFO with no writer, or a device,
//     does not block the open), then checked with fstat on the opened
//     descriptor, so a file swapped in after a check is not read either;
//   - a file whose size exceeds the cap is refused from fstat's size
//     without reading a byte (ErrTooLarge), and the read itself goes
//     through an io.LimitReader of cap+1 bytes, so a file that grows while
//     it is read costs at most cap+1 bytes;
//   - ctx is checked before the file is opened; Dir's callers check it
//     between files.
//
// Errors are wrapped with the path and match ErrNotRegular and ErrTooLarge
// with errors.Is; an absent file matches fs.ErrNotExist as os.ReadFile's
// does. Callers treat a refused file as they treat a corrupt one.
//
// Kubelet reads these files with os.ReadFile (no type check, no cap); this
// package is podstart's deliberate difference: a state directory entry
// must never hang the node agent or cost more than its cap.
package statefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

var (
	// ErrNotRegular: the path is a symlink, FIFO, device, socket or
	// directory rather than a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more bytes than the caller's cap.
	ErrTooLarge = errors.New("file too large")
)

// Read returns the content of the regular file at path, of at most max
// bytes. See the package doc for what it refuses.
func Read(ctx context.Context, path string, max int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	f, err := open(path)
	if err != nil {
		if isSymlinkErr(err) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (a symlink, not followed)", ErrNotRegular)}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (mode %v)", ErrNotRegular, fi.Mode().Type())}
	}
	if fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, at most %d read", ErrTooLarge, fi.Size(), max)}
	}
	b, err := readLimited(f, max)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// readLimited reads r to its end, or fails with ErrTooLarge having read
// max+1 bytes of it.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// Refused reports whether err is Read refusing a file (not a regular
// file, or over its cap) rather than failing to read it.
func Refused(err error) bool {
	return errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge)
}
