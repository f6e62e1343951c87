package mounts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of WriteAtomic, matched with errors.Is. Each is returned before
// anything is written, except ErrForeignEntry found while linking (a race
// with another writer of the volume directory).
var (
	// ErrInvalidPayload: a volume payload path that kubelet's
	// AtomicWriter refuses (empty, absolute, with a ".." element, starting
	// with "..", too long), or that cannot be written as asked: one path a
	// file and a directory of another, two spellings of one path with
	// different contents, a NUL byte.
	ErrInvalidPayload = errors.New("invalid volume payload path")
	// ErrInvalidFileMode: a payload File whose Mode has bits outside the
	// permission bits (0–0777): setuid, setgid, sticky or a type.
	ErrInvalidFileMode = errors.New("invalid volume payload file mode")
	// ErrUnsafeVolumeDir: the volume directory is not beneath the root
	// given to WriteAtomic, or a symlink or non-directory stands at or
	// above it (below the root).
	ErrUnsafeVolumeDir = errors.New("volume directory is not a directory beneath its root")
	// ErrForeignEntry: something the writer did not make stands where it
	// would write: ..data is not a link to one of its timestamped
	// directories, or a top-level name of the payload is taken by a file
	// or link that is not the payload's link into ..data.
	ErrForeignEntry = errors.New("volume directory entry not made by the payload writer")
)

// File is one file of a volume's payload (Secret, ConfigMap, downward API
// and projected volumes): its content and mode.
type File struct {
	Data []byte
	// Mode is the file's permission bits; any other bit (setuid, setgid,
	// sticky, a type) is refused (ErrInvalidFileMode).
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

// Kubelet's AtomicWriter limits and names.
const (
	maxPayloadPathLength = 4096
	maxPayloadNameLength = 255
	dataDirName          = "..data"
	newDataDirName       = "..data_tmp"
	payloadDirMode       = 0o755
)

// WriteAtomic is kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go):
// the payload (paths relative to dir) is written to a new timestamped
// directory "..<UTC time>.<random>" in dir, the ..data symlink is swapped
// to it with a rename, and each top-level name of the payload is a symlink
// "<name> -> ..data/<name>", so a reader in the container sees the old
// files or the new ones, never a mix.
//
// As kubelet's: a payload whose paths and contents equal those of the
// current timestamped directory is not rewritten (modes are not compared:
// fsGroup ownership adds group bits to them), but missing top-level links
// are made again; what the previous payload held and the new one does not
// is removed, and nothing else: the previous payload is read from the
// directory ..data points to, only its top-level names are unlinked from
// dir, and the old timestamped directory is removed. A File's FsUser owns
// the file and its top-level link; fsGroup ownership is the caller's,
// through WithSetPerms and SetVolumeOwnership.
//
// Safety beyond kubelet's:
//
//   - root is a directory the caller trusts (kubelet's root dir); dir
//     must be root or lexically beneath it. Every step from root down to
//     dir is opened with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
//     (a walk with O_NOFOLLOW where the kernel has no openat2), and the
//     missing ones are made 0755: a symlink or a non-directory at or
//     above dir is ErrUnsafeVolumeDir, and nothing is written. Every
//     later operation is relative to the opened dir, without following a
//     symlink: files are created with O_CREAT|O_EXCL|O_NOFOLLOW, so never
//     through something that was already there.
//   - The payload is checked before anything is written: kubelet's path
//     rules on the path as given and as cleaned (so "./..data" is
//     refused), a path that is a file in one entry and a directory in
//     another, or two spellings of one path with different contents
//     (ErrInvalidPayload), a Mode with bits outside 0777
//     (ErrInvalidFileMode).
//   - A top-level name taken by anything but the payload's own link, or a
//     ..data that is not a link to a timestamped directory, is
//     ErrForeignEntry (kubelet leaves the foreign file in place and the
//     payload's file hidden behind it; it would remove whatever stands at
//     an old top-level name, and RemoveAll wherever ..data points). An old
//     top-level name is unlinked only while it is still the payload's
//     link.
//   - A new timestamped directory is removed again when writing the
//     payload fails.
func WriteAtomic(root, dir string, files map[string]File, opts ...AtomicOption) error {
	var o atomicOptions
	for _, opt := range opts {
		opt(&o)
	}
	p, err := checkPayload(files)
	if err != nil {
		return err
	}
	rel, err := relBeneath(root, dir)
	if err != nil {
		return err
	}
	vol, err := openVolumeDir(root, rel, true)
	if err != nil {
		return fmt.Errorf("payload for %s: %w", dir, err)
	}
	defer unix.Close(vol)
	w := atomicWriter{vol: vol, dir: dir}
	return w.write(p, o)
}

// RemoveBeneath removes dir and everything in it, as os.RemoveAll does,
// without following a symlink: dir must be beneath root with no symlink
// or non-directory between them (ErrUnsafeVolumeDir), a symlink at dir is
// removed, not followed, and so is every symlink found inside. A missing
// dir is not an error.
func RemoveBeneath(root, dir string) error {
	rel, err := relBeneath(root, dir)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("remove %s: %w: it is the root", dir, ErrUnsafeVolumeDir)
	}
	parent, err := openVolumeDir(root, path.Dir(rel), false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	defer unix.Close(parent)
	if err := removeAllAt(parent, path.Base(rel)); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// payload is a checked payload: cleaned paths, sorted.
type payload struct {
	files map[string]File
	paths []string // sorted
	top   []string // top-level names, sorted
	owner map[string]*int64
}

// checkPayload has kubelet's validatePayload rules and podstart's (a
// cleaned path is checked too; conflicting paths, modes).
func checkPayload(files map[string]File) (payload, error) {
	p := payload{files: make(map[string]File, len(files)), owner: map[string]*int64{}}
	raw := make(map[string]string, len(files))
	for _, k := range slices.Sorted(maps.Keys(files)) {
		f := files[k]
		if err := validatePayloadPath(k); err != nil {
			return payload{}, err
		}
		if f.Mode&^fs.ModePerm != 0 {
			return payload{}, fmt.Errorf("%w %v for %q: only permission bits (0-0777) are allowed", ErrInvalidFileMode, f.Mode, k)
		}
		c := filepath.Clean(k)
		if prev, ok := p.files[c]; ok && !sameFile(prev, f) {
			return payload{}, fmt.Errorf("%w %q: %q is the same path with other contents", ErrInvalidPayload, k, raw[c])
		}
		p.files[c] = f
		raw[c] = k
	}
	p.paths = slices.Sorted(maps.Keys(p.files))
	for _, c := range p.paths {
		for d := path.Dir(c); d != "."; d = path.Dir(d) {
			if _, ok := p.files[d]; ok {
				return payload{}, fmt.Errorf("%w %q: %q is a file of the payload", ErrInvalidPayload, raw[c], d)
			}
		}
		// The link's owner: the first FsUser under that name.
		name, _, _ := strings.Cut(c, "/")
		if p.owner[name] == nil {
			p.owner[name] = p.files[c].FsUser
		}
	}
	p.top = slices.Sorted(maps.Keys(p.owner))
	return p, nil
}

func sameFile(a, b File) bool {
	return bytes.Equal(a.Data, b.Data) && a.Mode == b.Mode &&
		(a.FsUser == nil) == (b.FsUser == nil) && (a.FsUser == nil || *a.FsUser == *b.FsUser)
}

// validatePayloadPath has the rules of kubelet's AtomicWriter
// validatePath, applied to the path and to its cleaned form.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w %q: must not be empty", ErrInvalidPayload, p)
	case len(p) > maxPayloadPathLength:
		return fmt.Errorf("%w %.40q...: must be less than or equal to %d characters", ErrInvalidPayload, p, maxPayloadPathLength)
	case path.IsAbs(p):
		return fmt.Errorf("%w %q: must be relative path", ErrInvalidPayload, p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%w %q: must not contain a NUL byte", ErrInvalidPayload, p)
	}
	for part := range strings.SplitSeq(p, "/") {
		if part == ".." {
			return fmt.Errorf("%w %q: must not contain '..'", ErrInvalidPayload, p)
		}
		if len(part) > maxPayloadNameLength {
			return fmt.Errorf("%w %q: must not contain a path element longer than %d characters", ErrInvalidPayload, p, maxPayloadNameLength)
		}
	}
	switch c := path.Clean(p); {
	case c == ".":
		return fmt.Errorf("%w %q: must name a file", ErrInvalidPayload, p)
	case strings.HasPrefix(p, ".."), strings.HasPrefix(c, ".."):
		return fmt.Errorf("%w %q: must not start with '..'", ErrInvalidPayload, p)
	}
	return nil
}

// relBeneath is dir relative to root, which must not leave root.
func relBeneath(root, dir string) (string, error) {
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(dir))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %s is not beneath %s", ErrUnsafeVolumeDir, dir, root)
	}
	return rel, nil
}

// openVolumeDir opens root (following symlinks: it is trusted), then rel
// beneath it without following any, making missing directories when
// create is set. The result is an O_PATH descriptor.
func openVolumeDir(root, rel string, create bool) (int, error) {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	if rel == "." {
		return rootFd, nil
	}
	defer unix.Close(rootFd)
	fd, err := openBeneath(rootFd, rel, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) && create {
		fd, err = mkdirAllAt(rootFd, rel)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
			return -1, fmt.Errorf("%w: %s in %s: a symlink or a non-directory is in the way: %w", ErrUnsafeVolumeDir, rel, root, err)
		}
		return -1, &os.PathError{Op: "open", Path: filepath.Join(root, rel), Err: err}
	}
	return fd, nil
}

// mkdirAllAt opens rel beneath dirfd one name at a time without following
// symlinks, making the missing directories 0755.
func mkdirAllAt(dirfd int, rel string) (int, error) {
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	for name := range strings.SplitSeq(rel, "/") {
		next, err := openDirAt(cur, name, true)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// openDirAt opens the directory name in dirfd (O_PATH), never a symlink;
// with create, a missing one is made 0755 first.
func openDirAt(dirfd int, name string, create bool) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(dirfd, name, payloadDirMode); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	return fd, err
}

// noOpenat2 is set once the kernel said it has no openat2 (Linux < 5.6,
// or a seccomp filter that refuses it).
var noOpenat2 atomic.Bool

// openBeneath opens p beneath dirfd as openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) does: no step may be a symlink or leave dirfd.
// flags is O_PATH|O_DIRECTORY for a directory or O_RDONLY for a file.
func openBeneath(dirfd int, p string, flags int) (int, error) {
	if !noOpenat2.Load() {
		fd, err := openat2Beneath(dirfd, p, flags)
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	// The walk: each name opened with O_NOFOLLOW relative to its
	// directory; p is clean and has no ".." (checked by the callers).
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	names := strings.Split(p, "/")
	for _, name := range names[:len(names)-1] {
		next, err := openDirAt(cur, name, false)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	defer unix.Close(cur)
	return unix.Openat(cur, names[len(names)-1], flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

func openat2Beneath(dirfd int, p string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, p, &how)
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && i < 16 {
			continue // a rename raced the lookup
		}
		return fd, err
	}
}

// atomicWriter writes one payload into the volume directory vol (an
// O_PATH descriptor; dir is its path, for messages).
type atomicWriter struct {
	vol int
	dir string
}

func (w *atomicWriter) write(p payload, o atomicOptions) error {
	// The previous payload: what ..data points to.
	oldTs, err := readlinkAt(w.vol, dataDirName)
	switch {
	case errors.Is(err, unix.ENOENT):
		oldTs = ""
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%w: %s/%s is not a symlink", ErrForeignEntry, w.dir, dataDirName)
	case err != nil:
		return &os.PathError{Op: "readlink", Path: filepath.Join(w.dir, dataDirName), Err: err}
	case !isTimestampDir(oldTs):
		return fmt.Errorf("%w: %s/%s points to %q, not a timestamped directory", ErrForeignEntry, w.dir, dataDirName, oldTs)
	}
	write := true
	var remove []string
	if oldTs != "" {
		old, err := readTree(w.vol, oldTs)
		if err != nil {
			return fmt.Errorf("read the previous payload in %s/%s: %w", w.dir, oldTs, err)
		}
		remove = pathsToRemove(old, p)
		if len(remove) == 0 && !w.differs(oldTs, old, p) {
			// Up to date; the links are made again below if missing
			// (kubelet #121472), and nothing is removed.
			write, oldTs = false, ""
		}
	}
	missing := make([]string, 0, len(p.top))
	for _, name := range p.top {
		exists, err := w.checkLink(name)
		if err != nil {
			return err
		}
		if !exists {
			missing = append(missing, name)
		}
	}
	if write {
		if err := w.writeNew(p, o); err != nil {
			return err
		}
	}
	for _, name := range missing {
		if err := w.link(name, p.owner[name]); err != nil {
			return err
		}
	}
	var errs []error
	for _, rel := range remove {
		if !strings.Contains(rel, "/") {
			errs = append(errs, w.unlinkOld(rel))
		}
	}
	if oldTs != "" {
		if err := removeAllAt(w.vol, oldTs); err != nil {
			errs = append(errs, fmt.Errorf("remove the previous payload %s/%s: %w", w.dir, oldTs, err))
		}
	}
	return errors.Join(errs...)
}

// writeNew writes the payload to a new timestamped directory, runs the
// setPerms hook and swaps ..data to it; on failure the new directory is
// removed and ..data is left as it was.
func (w *atomicWriter) writeNew(p payload, o atomicOptions) (err error) {
	ts, tsFd, err := w.newTimestampDir()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, removeAllAt(w.vol, ts))
		}
	}()
	err = writeFiles(tsFd, p)
	unix.Close(tsFd)
	if err != nil {
		return fmt.Errorf("write payload to %s/%s: %w", w.dir, ts, err)
	}
	if o.setPerms != nil {
		if err := o.setPerms(); err != nil {
			return err
		}
	}
	if err := unix.Unlinkat(w.vol, newDataDirName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: filepath.Join(w.dir, newDataDirName), Err: err}
	}
	if err := unix.Symlinkat(ts, w.vol, newDataDirName); err != nil {
		return &os.PathError{Op: "symlink", Path: filepath.Join(w.dir, newDataDirName), Err: err}
	}
	if err := unix.Renameat(w.vol, newDataDirName, w.vol, dataDirName); err != nil {
		_ = unix.Unlinkat(w.vol, newDataDirName, 0)
		return &os.PathError{Op: "rename", Path: filepath.Join(w.dir, newDataDirName), Err: err}
	}
	return nil
}

// newTimestampDir makes "..<UTC time>.<random>" in the volume directory,
// 0755 whatever the umask, and opens it.
func (w *atomicWriter) newTimestampDir() (string, int, error) {
	prefix := time.Now().UTC().Format("..2006_01_02_15_04_05.")
	for range 10000 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := unix.Mkdirat(w.vol, name, 0o700)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, &os.PathError{Op: "mkdir", Path: filepath.Join(w.dir, name), Err: err}
		}
		fd, err := unix.Openat(w.vol, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			if err = unix.Fchmod(fd, payloadDirMode); err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			return "", -1, errors.Join(&os.PathError{Op: "open", Path: filepath.Join(w.dir, name), Err: err}, removeAllAt(w.vol, name))
		}
		return name, fd, nil
	}
	return "", -1, fmt.Errorf("mkdir %s/%s*: too many names taken", w.dir, prefix)
}

// writeFiles writes the payload's files into the new directory tsFd,
// their directories made 0755 (less the umask, as kubelet's). Files are
// created exclusively and without following a symlink, so nothing is
// ever written through what was there before. The open directories are
// a stack along the current path: at most its depth are open.
func writeFiles(tsFd int, p payload) error {
	type openDir struct {
		name string
		fd   int
	}
	var stack []openDir
	defer func() {
		for _, d := range stack {
			unix.Close(d.fd)
		}
	}()
	for _, rel := range p.paths {
		f := p.files[rel]
		names := strings.Split(rel, "/")
		dirs := names[:len(names)-1]
		n := 0
		for n < len(stack) && n < len(dirs) && stack[n].name == dirs[n] {
			n++
		}
		for _, d := range stack[n:] {
			unix.Close(d.fd)
		}
		stack = stack[:n]
		for _, name := range dirs[n:] {
			parent := tsFd
			if len(stack) > 0 {
				parent = stack[len(stack)-1].fd
			}
			fd, err := openDirAt(parent, name, true)
			if err != nil {
				return &os.PathError{Op: "mkdir", Path: path.Dir(rel), Err: err}
			}
			stack = append(stack, openDir{name, fd})
		}
		parent := tsFd
		if len(stack) > 0 {
			parent = stack[len(stack)-1].fd
		}
		if err := writeFileAt(parent, names[len(names)-1], rel, f); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAt creates name in dirfd exclusively with f's content, mode
// (whatever the umask) and owner.
func writeFileAt(dirfd int, name, rel string, f File) error {
	mode := uint32(f.Mode.Perm())
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	file := os.NewFile(uintptr(fd), rel)
	_, err = file.Write(f.Data)
	if err == nil {
		err = file.Chmod(f.Mode.Perm())
	}
	if err == nil && f.FsUser != nil {
		err = file.Chown(int(*f.FsUser), -1)
	}
	return errors.Join(err, file.Close())
}

// oldEntry is one path of the previous payload's directory.
type oldEntry struct {
	regular bool
	size    int64
}

// readTree lists the previous timestamped directory ts, without following
// symlinks; a missing one is empty.
func readTree(vol int, ts string) (map[string]oldEntry, error) {
	fd, err := unix.Openat(vol, ts, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]oldEntry{}
	return out, walkAt(fd, "", out)
}

// walkAt adds the entries of the directory fd (closed on return) to out.
func walkAt(fd int, prefix string, out map[string]oldEntry) error {
	f := os.NewFile(uintptr(fd), prefix)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return err
		}
		rel := path.Join(prefix, name)
		out[rel] = oldEntry{regular: st.Mode&unix.S_IFMT == unix.S_IFREG, size: st.Size}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return &os.PathError{Op: "open", Path: rel, Err: err}
			}
			if err := walkAt(sub, rel, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// pathsToRemove is kubelet's: the previous payload's paths that are
// neither a path of the new one nor a directory on the way to one,
// sorted.
func pathsToRemove(old map[string]oldEntry, p payload) []string {
	var out []string
	for rel := range old {
		if _, ok := p.files[rel]; ok {
			continue
		}
		if !p.hasDir(rel) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

// hasDir says whether d is a directory of the payload.
func (p payload) hasDir(d string) bool {
	i, _ := slices.BinarySearch(p.paths, d+"/")
	return i < len(p.paths) && strings.HasPrefix(p.paths[i], d+"/")
}

// differs is kubelet's shouldWritePayload: some file of the payload is
// missing from the previous directory or has other contents. A file that
// cannot be read there (a symlink, gone) differs.
func (w *atomicWriter) differs(ts string, old map[string]oldEntry, p payload) bool {
	tsFd := -1
	var buf []byte
	defer func() {
		if tsFd >= 0 {
			unix.Close(tsFd)
		}
	}()
	for _, rel := range p.paths {
		e, ok := old[rel]
		data := p.files[rel].Data
		if !ok || !e.regular || e.size != int64(len(data)) {
			return true
		}
		if tsFd < 0 {
			var err error
			if tsFd, err = unix.Openat(w.vol, ts, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
				return true
			}
		}
		if len(buf) < len(data)+1 {
			buf = make([]byte, len(data)+1)
		}
		if !sameContent(tsFd, rel, data, buf[:len(data)+1]) {
			return true
		}
	}
	return false
}

// sameContent says whether rel in dirfd holds data; buf is scratch, one
// byte longer than data.
func sameContent(dirfd int, rel string, data, buf []byte) bool {
	fd, err := openBeneath(dirfd, rel, unix.O_RDONLY)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n == len(data) && bytes.Equal(buf[:n], data)
}

// checkLink says whether the top-level name is the payload's own link,
// and refuses anything else there (ErrForeignEntry); a missing name is
// fine.
func (w *atomicWriter) checkLink(name string) (exists bool, err error) {
	target, err := readlinkAt(w.vol, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false, nil
	case err == nil && target == dataDirName+"/"+name:
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%w: %s/%s is a link to %q, not to %s/%s", ErrForeignEntry, w.dir, name, target, dataDirName, name)
	case errors.Is(err, unix.EINVAL):
		return false, fmt.Errorf("%w: %s/%s is not the payload's link", ErrForeignEntry, w.dir, name)
	}
	return false, &os.PathError{Op: "readlink", Path: filepath.Join(w.dir, name), Err: err}
}

// link makes the missing user-visible link "name -> ..data/name", owned
// by owner.
func (w *atomicWriter) link(name string, owner *int64) error {
	err := unix.Symlinkat(dataDirName+"/"+name, w.vol, name)
	if errors.Is(err, unix.EEXIST) {
		_, err := w.checkLink(name) // made meanwhile: ours, or refused
		return err
	}
	if err != nil {
		return &os.PathError{Op: "symlink", Path: filepath.Join(w.dir, name), Err: err}
	}
	if owner != nil {
		if err := unix.Fchownat(w.vol, name, int(*owner), -1, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "lchown", Path: filepath.Join(w.dir, name), Err: err}
		}
	}
	return nil
}

// unlinkOld removes the top-level name of the previous payload while it
// is still the payload's link; anything else there is not the writer's.
func (w *atomicWriter) unlinkOld(name string) error {
	if target, err := readlinkAt(w.vol, name); err != nil || target != dataDirName+"/"+name {
		return nil
	}
	if err := unix.Unlinkat(w.vol, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: filepath.Join(w.dir, name), Err: err}
	}
	return nil
}

// isTimestampDir says whether a ..data target is a name the writer may
// have made: one hidden name that is not ..data or ..data_tmp.
func isTimestampDir(name string) bool {
	return len(name) > 2 && strings.HasPrefix(name, "..") && !strings.Contains(name, "/") &&
		name != dataDirName && name != newDataDirName
}

func readlinkAt(dirfd int, name string) (string, error) {
	var small [256]byte
	buf := small[:]
	for {
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// removeAllAt removes name in dirfd and, if it is a directory, all it
// holds, never following a symlink. A missing name is not an error.
func removeAllAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	for _, n := range names {
		if rerr := removeAllAt(fd, n); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	f.Close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}
