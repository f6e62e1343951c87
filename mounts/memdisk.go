package mounts

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemDisk is a Disk in memory: directories, regular files and symbolic
// links under "/", so that a test or an operator can compute a
// container's mounts (subPaths, the hosts file, the termination log) with
// no file system. Each Disk method has OSDisk's semantics: symlinks are
// resolved as filepath.EvalSymlinks resolves them, a subPath that
// resolves outside its volume fails with ErrSubPathEscape, and a missing
// or misplaced path fails with an *fs.PathError whose Err is the errno
// the host would give (syscall.ENOENT, ENOTDIR, EEXIST), so errors.Is
// with fs.ErrNotExist or fs.ErrExist answers as on the host. Modes are
// kept as given, as OSDisk sets them whatever the umask; directories that
// WriteFile and CreateTerminationFile make get 0750, which OSDisk asks
// for. A relative name is taken from "/". MkdirAll, Symlink and WriteFile
// lay out what a volume holds beforehand, Lstat and ReadFile show what
// was made.
//
// The zero value is an empty disk holding "/"; a MemDisk is safe for
// concurrent use and must not be copied after first use.
type MemDisk struct {
	mu    sync.Mutex
	nodes map[string]*memNode // by clean absolute path
}

var _ Disk = (*MemDisk)(nil)

type memNode struct {
	mode    fs.FileMode // type bits and permission
	data    []byte      // a file's content
	target  string      // a symlink's target
	modTime time.Time
}

// maxSymlinks is the number of links one resolution follows before it
// gives up, as filepath.EvalSymlinks does.
const maxSymlinks = 255

// errTooManyLinks has filepath.EvalSymlinks' text for a link loop.
var errTooManyLinks = errors.New("EvalSymlinks: too many links")

func (d *MemDisk) init() {
	if d.nodes == nil {
		d.nodes = map[string]*memNode{"/": {mode: fs.ModeDir | 0o755}}
	}
}

func abs(name string) string { return filepath.Join("/", name) }

// MkdirAll makes name and every missing parent with mode perm, as
// os.MkdirAll does (symlinks to directories are followed; a file in the
// way is ENOTDIR). Setuid, setgid and sticky bits in perm are kept.
func (d *MemDisk) MkdirAll(name string, perm fs.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	_, err := d.mkdirAll(abs(name), perm)
	return err
}

// Symlink makes newname a symbolic link to oldname, as os.Symlink does:
// newname's directory must exist and newname must not.
func (d *MemDisk) Symlink(oldname, newname string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	p, err := d.resolveParent("symlink", abs(newname))
	if err != nil {
		return err
	}
	if _, ok := d.nodes[p]; ok {
		return &fs.PathError{Op: "symlink", Path: newname, Err: syscall.EEXIST}
	}
	d.nodes[p] = &memNode{mode: fs.ModeSymlink | 0o777, target: oldname, modTime: time.Now()}
	return nil
}

// Lstat describes name without following a final symlink, as os.Lstat
// does.
func (d *MemDisk) Lstat(name string) (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	p, err := d.resolveParent("lstat", abs(name))
	if err != nil {
		return nil, err
	}
	n, ok := d.nodes[p]
	if !ok {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: syscall.ENOENT}
	}
	return memInfo{name: filepath.Base(p), node: n}, nil
}

// MakeSubPathDir implements Disk.
func (d *MemDisk) MakeSubPathDir(root, subPath string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	realRoot, err := d.evalSymlinks(root)
	if err != nil {
		return err
	}
	cur, missing, err := walkSubPath(realRoot, subPath, func(p string) (bool, error) {
		if c := d.nodes[filepath.Dir(p)]; c == nil || !c.mode.IsDir() {
			return false, &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOTDIR}
		}
		n, ok := d.nodes[p]
		if !ok {
			return false, &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOENT}
		}
		return n.mode&fs.ModeSymlink != 0, nil
	}, d.evalSymlinks)
	if err != nil || missing < 0 {
		return err
	}
	r := d.nodes[realRoot]
	perm := r.mode.Perm() | r.mode&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky)
	segs := strings.Split(filepath.Clean(subPath), "/")
	_, err = d.mkdirAll(filepath.Join(append([]string{cur}, segs[missing:]...)...), perm)
	return err
}

// ResolveSubPath implements Disk.
func (d *MemDisk) ResolveSubPath(root, subPath string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	realRoot, err := d.evalSymlinks(root)
	if err != nil {
		return "", err
	}
	want, err := d.evalSymlinks(filepath.Join(realRoot, subPath))
	if err != nil {
		return "", err
	}
	if !within(realRoot, want) {
		return "", fmt.Errorf("%w: %q resolves to %q", ErrSubPathEscape, subPath, want)
	}
	return want, nil
}

// WriteFile implements Disk: name's directory is made (0750) if missing,
// a symlink at name is followed, and the file gets exactly perm.
func (d *MemDisk) WriteFile(name string, data []byte, perm fs.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if _, err := d.mkdirAll(filepath.Dir(abs(name)), 0o750); err != nil {
		return err
	}
	p, err := d.resolve("open", abs(name), true)
	if err != nil {
		return err
	}
	if n, ok := d.nodes[p]; ok && n.mode.IsDir() {
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	d.nodes[p] = &memNode{mode: perm.Perm() | perm&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky), data: append([]byte(nil), data...), modTime: time.Now()}
	return nil
}

// ReadFile implements Disk, following symlinks as os.ReadFile does.
func (d *MemDisk) ReadFile(name string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	p, err := d.resolve("open", abs(name), true)
	if err != nil {
		return nil, err
	}
	n, ok := d.nodes[p]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	if n.mode.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return append([]byte(nil), n.data...), nil
}

// CreateTerminationFile implements Disk: <dir>/<8 random hex digits>, an
// empty file of mode 0666, dir made (0750) if missing.
func (d *MemDisk) CreateTerminationFile(dir string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.init()
	if _, err := d.mkdirAll(abs(dir), 0o750); err != nil {
		return "", err
	}
	name := filepath.Join(dir, hex.EncodeToString(b[:]))
	p, err := d.resolve("open", abs(name), false)
	if err != nil {
		return "", err
	}
	if _, ok := d.nodes[p]; ok {
		return "", &fs.PathError{Op: "open", Path: name, Err: syscall.EEXIST}
	}
	d.nodes[p] = &memNode{mode: 0o666, modTime: time.Now()}
	return name, nil
}

// mkdirAll makes p (absolute) and its missing parents, following
// symlinks; it returns p resolved.
func (d *MemDisk) mkdirAll(p string, perm fs.FileMode) (string, error) {
	if r, err := d.resolve("mkdir", p, true); err == nil {
		if n, ok := d.nodes[r]; ok {
			if !n.mode.IsDir() {
				return "", &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			return r, nil
		}
	}
	if p == "/" {
		return "/", nil
	}
	parent, err := d.mkdirAll(filepath.Dir(p), perm)
	if err != nil {
		return "", err
	}
	r := filepath.Join(parent, filepath.Base(p))
	if n, ok := d.nodes[r]; ok {
		// A dangling symlink or a file: mkdir fails as on the host.
		if n.mode.IsDir() {
			return r, nil
		}
		return "", &fs.PathError{Op: "mkdir", Path: p, Err: syscall.EEXIST}
	}
	d.nodes[r] = &memNode{mode: fs.ModeDir | perm.Perm() | perm&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky), modTime: time.Now()}
	return r, nil
}

// evalSymlinks is filepath.EvalSymlinks over the disk.
func (d *MemDisk) evalSymlinks(name string) (string, error) {
	p, err := d.resolve("lstat", abs(name), true)
	if err != nil {
		return "", err
	}
	if _, ok := d.nodes[p]; !ok {
		return "", &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOENT}
	}
	return p, nil
}

// resolveParent resolves every element of p (absolute) but the last.
func (d *MemDisk) resolveParent(op, p string) (string, error) {
	return d.resolve(op, p, false)
}

// resolve walks p (absolute) element by element from "/", following
// symlinks in every directory element and, when followLast, in the last
// one. The result names a node only if it exists; a missing last element
// is not an error, a missing or non-directory parent is (ENOENT,
// ENOTDIR), and more than maxSymlinks links is errTooManyLinks.
func (d *MemDisk) resolve(op, p string, followLast bool) (string, error) {
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	links := 0
	for len(rest) > 0 {
		seg := rest[0]
		rest = rest[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		if n := d.nodes[cur]; n == nil || !n.mode.IsDir() {
			return "", &fs.PathError{Op: op, Path: filepath.Join(cur, seg), Err: syscall.ENOTDIR}
		}
		next := filepath.Join(cur, seg)
		n, ok := d.nodes[next]
		if !ok {
			if len(rest) > 0 {
				return "", &fs.PathError{Op: op, Path: next, Err: syscall.ENOENT}
			}
			return next, nil
		}
		if n.mode&fs.ModeSymlink == 0 || len(rest) == 0 && !followLast {
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", errTooManyLinks
		}
		target := strings.Split(n.target, "/")
		if filepath.IsAbs(n.target) {
			cur = "/"
		}
		rest = append(target, rest...)
	}
	return cur, nil
}

// memInfo is a node's fs.FileInfo.
type memInfo struct {
	name string
	node *memNode
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return int64(len(i.node.data)) }
func (i memInfo) Mode() fs.FileMode  { return i.node.mode }
func (i memInfo) ModTime() time.Time { return i.node.modTime }
func (i memInfo) IsDir() bool        { return i.node.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }
