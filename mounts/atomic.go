package mounts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrInvalidPayload: a volume payload path that kubelet's AtomicWriter
// refuses (absolute, with a ".." element, starting with "..", too long).
var ErrInvalidPayload = errors.New("invalid volume payload path")

// File is one file of a volume's payload (Secret, ConfigMap, downward API
// and projected volumes): its content and mode.
type File struct {
	Data []byte
	Mode fs.FileMode
	// FsUser, when set, owns the file and its top-level link (kubelet's
	// FileProjection.FsUser): a projected token is readable by the pod's
	// single runAsUser at mode 0600.
	FsUser *int64
}

// AtomicOption changes how WriteAtomic writes a payload.
type AtomicOption func(*atomicOptions)

type atomicOptions struct {
	setPerms func() error
}

// WithSetPerms runs f after a new payload is written and before it becomes
// visible (kubelet's setPerms hook), so that ownership is applied before a
// container can read the files; f does not run when the payload is
// unchanged.
func WithSetPerms(f func() error) AtomicOption {
	return func(o *atomicOptions) { o.setPerms = f }
}

// Kubelet's AtomicWriter limits.
const (
	maxPayloadPathLength = 4096
	maxPayloadNameLength = 255
)

// WriteAtomic is kubelet's AtomicWriter: the payload (paths relative to
// dir) is written to a new timestamped directory, the ..data symlink is
// swapped to it with a rename, and each top-level name is a symlink
// through ..data, so a reader in the container sees the old files or the
// new ones, never a mix. A payload whose names and contents are unchanged
// is not rewritten (kubelet compares contents, not modes); names no longer
// in the payload are removed. Paths are checked by kubelet's rules before
// anything is written (ErrInvalidPayload). A File's FsUser owns it;
// fsGroup ownership is the caller's, through WithSetPerms and
// SetVolumeOwnership.
func WriteAtomic(dir string, files map[string]File, opts ...AtomicOption) error {
	var o atomicOptions
	for _, opt := range opts {
		opt(&o)
	}
	clean := make(map[string]File, len(files))
	for p, f := range files {
		if err := validatePayloadPath(p); err != nil {
			return err
		}
		clean[filepath.Clean(p)] = f // as kubelet's validatePayload
	}
	files = clean
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dataLink := filepath.Join(dir, "..data")
	old, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if old != "" && samePayload(filepath.Join(dir, old), files) {
		return nil
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	for p, f := range files {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.Mode); err != nil { // whatever the umask
			return err
		}
		if f.FsUser != nil {
			if err := os.Lchown(full, int(*f.FsUser), -1); err != nil {
				return err
			}
		}
	}
	if o.setPerms != nil {
		if err := o.setPerms(); err != nil {
			return err
		}
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return err
	}
	top := map[string]*int64{} // top-level name → the owner of its link
	for p, f := range files {
		name := strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")[0]
		if top[name] == nil {
			top[name] = f.FsUser
		}
	}
	for name, owner := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
			if owner != nil {
				if err := os.Lchown(link, int(*owner), -1); err != nil {
					return err
				}
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := top[e.Name()]; !ok && !strings.HasPrefix(e.Name(), "..") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// validatePayloadPath has the rules of kubelet's AtomicWriter validatePath.
func validatePayloadPath(p string) error {
	parts := strings.Split(filepath.ToSlash(p), "/")
	switch {
	case len(p) > maxPayloadPathLength:
		return fmt.Errorf("%w %q: must be less than or equal to %d characters", ErrInvalidPayload, p, maxPayloadPathLength)
	case filepath.IsAbs(p):
		return fmt.Errorf("%w %q: must be relative path", ErrInvalidPayload, p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("%w %q: must not start with '..'", ErrInvalidPayload, p)
	}
	for _, part := range parts {
		if part == ".." {
			return fmt.Errorf("%w %q: must not contain '..'", ErrInvalidPayload, p)
		}
		if len(part) > maxPayloadNameLength {
			return fmt.Errorf("%w %q: must not contain a path element longer than %d characters", ErrInvalidPayload, p, maxPayloadNameLength)
		}
	}
	return nil
}

// samePayload says whether dir holds exactly the payload's names and
// contents; modes are not compared, as kubelet's shouldWritePayload does
// not (fsGroup ownership adds group bits to them).
func samePayload(dir string, files map[string]File) bool {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, ok := files[rel]
		b, rerr := os.ReadFile(p)
		if !ok || rerr != nil || !bytes.Equal(b, f.Data) {
			return errors.New("differs")
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}
