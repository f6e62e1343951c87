package mounts

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"github.com/cyphar/filepath-securejoin/pathrs-lite/procfs"
	"golang.org/x/sys/unix"
)

// Disk holds Make's side effects, so the translation itself can be tested
// without touching a file system.
type Disk interface {
	// MakeSubPathDir creates subPath under the volume at root, as
	// directories with root's permission bits, unless it exists. It fails
	// if an existing part resolves outside root.
	MakeSubPathDir(root, subPath string) error
	// ResolveSubPath returns the host path of subPath inside root, with
	// every symlink resolved; it fails if that is outside root or if the
	// path changed while it was being resolved.
	ResolveSubPath(root, subPath string) (string, error)
	// WriteFile writes a file (the hosts file), creating its directory.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	// ReadFile reads a file (the node's hosts file).
	ReadFile(name string) ([]byte, error)
	// CreateTerminationFile creates a new, empty, world-writable file with
	// a random name in dir (made if missing) and returns its path.
	CreateTerminationFile(dir string) (string, error)
}

// OSDisk is the Disk of the host. SubPaths are opened with
// filepath-securejoin's pathrs-lite (openat2 RESOLVE_IN_ROOT where the
// kernel has it) so no step of the resolution can leave the volume; a path
// whose plain resolution leaves the volume is refused rather than
// reinterpreted inside it.
type OSDisk struct {
	// betweenCheckAndOpen runs, in tests, between the plain resolution and
	// the scoped open: where an attacker would swap in a symlink.
	betweenCheckAndOpen func()
}

var _ Disk = OSDisk{}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) || root == "/"
}

// walkSubPath follows subPath beneath realRoot one component at a time,
// as MakeSubPathDir checks it before making anything: every existing
// component (symlinks resolved with eval) must stay within realRoot, and a
// dangling symlink is refused, since nothing can tell where mkdir would
// go. It returns the last existing directory and the index of the first
// missing component (-1: none is missing). lstat reports whether a path is
// a symlink, with an error matching fs.ErrNotExist when it is missing.
func walkSubPath(realRoot, subPath string, lstat func(string) (symlink bool, err error), eval func(string) (string, error)) (cur string, missing int, err error) {
	segs := strings.Split(filepath.Clean(subPath), "/")
	cur, missing = realRoot, -1
	for i, seg := range segs {
		next := filepath.Join(cur, seg)
		symlink, err := lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return cur, i, nil
		}
		if err != nil {
			return "", 0, err
		}
		if symlink {
			resolved, err := eval(next)
			if errors.Is(err, fs.ErrNotExist) {
				return "", 0, fmt.Errorf("%w: %q is a dangling symlink", ErrSubPathEscape, next)
			}
			if err != nil {
				return "", 0, err
			}
			next = resolved
		}
		if !within(realRoot, next) {
			return "", 0, fmt.Errorf("%w: %q resolves to %q", ErrSubPathEscape, subPath, next)
		}
		cur = next
	}
	return cur, missing, nil
}

// MakeSubPathDir implements Disk.
func (d OSDisk) MakeSubPathDir(root, subPath string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	_, missing, err := walkSubPath(realRoot, subPath, func(p string) (bool, error) {
		fi, err := os.Lstat(p)
		if err != nil {
			return false, err
		}
		return fi.Mode()&fs.ModeSymlink != 0, nil
	}, filepath.EvalSymlinks)
	if err != nil {
		return err
	}
	if missing < 0 {
		return nil
	}
	info, err := os.Stat(realRoot)
	if err != nil {
		return err
	}
	perm := info.Mode().Perm() | info.Mode()&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky)
	rootH, err := os.OpenFile(realRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer rootH.Close()
	h, err := pathrs.MkdirAllHandle(rootH, subPath, info.Mode().Perm())
	if err != nil {
		return err
	}
	h.Close()
	// kubelet fchmods each new directory so the umask does not apply and
	// setgid survives (fsGroup's g+rwx).
	segs := strings.Split(filepath.Clean(subPath), "/")
	for i := missing; i < len(segs); i++ {
		dh, err := pathrs.OpenatInRoot(rootH, strings.Join(segs[:i+1], "/"))
		if err != nil {
			return err
		}
		err = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", dh.Fd()), uint32(toUnixMode(perm)))
		dh.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func toUnixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// ResolveSubPath implements Disk.
func (d OSDisk) ResolveSubPath(root, subPath string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	want, err := filepath.EvalSymlinks(filepath.Join(realRoot, subPath))
	if err != nil {
		return "", err
	}
	if !within(realRoot, want) {
		return "", fmt.Errorf("%w: %q resolves to %q", ErrSubPathEscape, subPath, want)
	}
	if d.betweenCheckAndOpen != nil {
		d.betweenCheckAndOpen()
	}
	// Open the plainly resolved path, now free of symlinks, scoped to the
	// root: an absolute link that stays inside the volume (a log link
	// naming the volume by its host path) is followed as kubelet follows
	// it, and a link swapped in meanwhile cannot leave the root and shows
	// as a different result below.
	rel, err := filepath.Rel(realRoot, want)
	if err != nil {
		return "", err
	}
	h, err := pathrs.OpenInRoot(realRoot, rel)
	if err != nil {
		// It resolved a moment ago: something changed under us.
		return "", fmt.Errorf("%w: %q changed while it was being resolved: %v", ErrSubPathEscape, subPath, err)
	}
	defer h.Close()
	got, err := procfs.ProcSelfFdReadlink(h)
	if err != nil {
		return "", err
	}
	if got != want || !within(realRoot, got) {
		return "", fmt.Errorf("%w: %q changed while it was being resolved", ErrSubPathEscape, subPath)
	}
	return got, nil
}

// WriteFile implements Disk; the mode is set explicitly, whatever the
// umask, as kubelet does for the hosts file. Kubelet rewrites the hosts
// file on every container start; a file that already holds exactly data
// with mode perm is left alone, which looks the same from outside and
// saves a truncate and write on every start (a container that changed its
// /etc/hosts still gets it restored).
//
// A file written or found whole is remembered by its inode, size, mode
// and change time, so the next start of a container of the same pod knows
// it unchanged from one lstat instead of reading it: any write or chmod
// since moves its change time. (One that lands within the file system's
// timestamp granularity of podstart's own write, before any container of
// the pod could have started, would go unseen; the containers share the
// file anyway.)
func (OSDisk) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if written.unchanged(name, data, perm) {
		return nil
	}
	if before, ok := stampOf(name); ok && holds(name, data, perm) {
		if after, ok := stampOf(name); ok && after == before {
			written.remember(name, data, after) // not changed while read
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(name, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(name, perm); err != nil {
		return err
	}
	if st, ok := stampOf(name); ok {
		written.remember(name, data, st)
	}
	return nil
}

// written is what OSDisk.WriteFile last wrote or verified, by path.
var written = &writtenFiles{files: map[string]writtenFile{}}

// maxWritten bounds the files remembered (a node's pods' hosts files);
// past it the record starts again empty.
const maxWritten = 4096

type writtenFiles struct {
	mu    sync.Mutex
	files map[string]writtenFile
}

type writtenFile struct {
	stamp fileStamp
	data  string
}

// fileStamp is what changes when a file is replaced, written or chmod-ed.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mode         uint32
	mtime, ctime unix.Timespec
}

func stampOf(name string) (fileStamp, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(name, &st); err != nil {
		return fileStamp{}, false
	}
	return fileStamp{dev: st.Dev, ino: st.Ino, size: st.Size, mode: st.Mode, mtime: st.Mtim, ctime: st.Ctim}, true
}

func (w *writtenFiles) unchanged(name string, data []byte, perm fs.FileMode) bool {
	w.mu.Lock()
	f, ok := w.files[name]
	w.mu.Unlock()
	if !ok || f.data != string(data) {
		return false
	}
	st, ok := stampOf(name)
	return ok && st == f.stamp && st.mode&unix.S_IFMT == unix.S_IFREG && fs.FileMode(st.mode&0o777) == perm
}

func (w *writtenFiles) remember(name string, data []byte, st fileStamp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.files) >= maxWritten {
		w.files = map[string]writtenFile{}
	}
	w.files[name] = writtenFile{stamp: st, data: string(data)}
}

// holds says whether name is a regular file of mode perm holding exactly
// data. The file is mounted into containers, which may grow it or write
// anything into it: only a file of data's size is read, and at most that
// many bytes, without following a link or waiting on a FIFO.
func holds(name string, data []byte, perm fs.FileMode) bool {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) || fi.Mode().Perm() != perm {
		return false
	}
	old := make([]byte, len(data)+1)
	n, err := io.ReadFull(f, old)
	return (err == io.ErrUnexpectedEOF || err == io.EOF) && n == len(data) && bytes.Equal(old[:n], data)
}

// ReadFile implements Disk.
func (OSDisk) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// CreateTerminationFile implements Disk: <dir>/<8 random hex digits>, mode
// 0666, new for every container instance.
func (OSDisk) CreateTerminationFile(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := filepath.Join(dir, hex.EncodeToString(b[:]))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return name, f.Chmod(0o666)
}
