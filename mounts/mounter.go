package mounts

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrMountNotPermitted: the process may not mount (EPERM: no
// CAP_SYS_ADMIN in its mount namespace). A memory-backed volume then
// fails, as it does with kubelet; it is never quietly put on disk.
var ErrMountNotPermitted = errors.New("not permitted to mount")

// FSTypeTmpfs is the file system type of a memory-backed volume.
const FSTypeTmpfs = "tmpfs"

// MountPoint is one entry of a mount table.
type MountPoint struct {
	// Path is where the file system is mounted.
	Path string
	// FSType is its type as the kernel names it ("tmpfs", "ext4").
	FSType string
}

// Mounter makes and removes the mounts podstart itself owns: the tmpfs
// behind Secret, downward API, projected and emptyDir medium Memory
// volumes, as kubelet's emptyDir plugin mounts them. It is an interface so
// that callers can test without the privilege to mount (mounts/fake);
// HostMounter is the host's.
type Mounter interface {
	// MountTmpfs mounts a new tmpfs at dir, an existing directory. size
	// is its limit in bytes; 0 leaves the kernel's default (half the
	// RAM), as kubelet does when it knows no limit.
	MountTmpfs(dir string, size int64) error
	// Unmount unmounts the file system mounted at dir (the top one, if
	// mounts are stacked).
	Unmount(dir string) error
	// MountPoint says whether dir is the root of a mount and, if so, the
	// type of its file system. A missing dir is not a mount point.
	MountPoint(dir string) (fsType string, isMountPoint bool, err error)
	// List returns the mount table of this mount namespace, in mount
	// order.
	List() ([]MountPoint, error)
}

// HostMounter is the Mounter of the host, through mount(2), umount2(2),
// statx(2) and /proc/self/mountinfo. A tmpfs gets kubelet's options:
// size=<bytes> when a limit applies and noswap where the kernel takes it
// (Linux 6.4 and later, outside a user namespace). Kubelet tests that
// once with a throw-away mount; HostMounter mounts with noswap and, if
// the kernel refuses the option, mounts without it and remembers. The
// zero value is ready to use; a HostMounter is safe for concurrent use.
type HostMounter struct {
	noNoswap atomic.Bool // the kernel refused noswap once
}

var _ Mounter = (*HostMounter)(nil)

// TmpfsOptions is kubelet's generateTmpfsMountOptions: size=<bytes> when
// size is positive, then noswap when the kernel supports it.
func TmpfsOptions(size int64, noswap bool) []string {
	var opts []string
	if size > 0 {
		opts = append(opts, "size="+strconv.FormatInt(size, 10))
	}
	if noswap {
		opts = append(opts, "noswap")
	}
	return opts
}

// MountTmpfs implements Mounter.
func (m *HostMounter) MountTmpfs(dir string, size int64) error {
	noswap := !m.noNoswap.Load()
	err := unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(TmpfsOptions(size, noswap), ","))
	if errors.Is(err, unix.EINVAL) && noswap {
		// A kernel before 6.4, or a user namespace: no noswap there.
		if err = unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(TmpfsOptions(size, false), ",")); err == nil {
			m.noNoswap.Store(true)
		}
	}
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("mount tmpfs at %s: %w: %w", dir, ErrMountNotPermitted, err)
	}
	if err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return nil
}

// Unmount implements Mounter. A symlink at dir is not followed.
func (*HostMounter) Unmount(dir string) error {
	if err := unix.Unmount(dir, unix.UMOUNT_NOFOLLOW); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("unmount %s: %w: %w", dir, ErrMountNotPermitted, err)
		}
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// MountPoint implements Mounter: statx's mount-root attribute (Linux 5.8
// and later), else a device differing from the parent's (kubelet's
// IsLikelyNotMountPoint), and statfs's magic for the type. A symlink at
// dir is not followed.
func (*HostMounter) MountPoint(dir string) (string, bool, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO, &stx)
	if errors.Is(err, unix.ENOENT) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("statx %s: %w", dir, err)
	}
	if stx.Mode&unix.S_IFMT == unix.S_IFLNK {
		return "", false, nil
	}
	var isMount bool
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		isMount = stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	} else {
		var parent unix.Stat_t
		if err := unix.Lstat(filepath.Dir(filepath.Clean(dir)), &parent); err != nil {
			return "", false, fmt.Errorf("stat parent of %s: %w", dir, err)
		}
		isMount = unix.Mkdev(stx.Dev_major, stx.Dev_minor) != parent.Dev
	}
	if !isMount {
		return "", false, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", true, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return fsTypeName(st.Type), true, nil
}

// fsTypeName names the file systems podstart tells apart; others by their
// magic number.
func fsTypeName(magic int64) string {
	switch magic {
	case unix.TMPFS_MAGIC:
		return FSTypeTmpfs
	case unix.HUGETLBFS_MAGIC:
		return "hugetlbfs"
	}
	return "0x" + strconv.FormatInt(magic, 16)
}

// List implements Mounter from /proc/self/mountinfo.
func (*HostMounter) List() ([]MountPoint, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMountInfo(f)
}

// ParseMountInfo reads a mountinfo file (proc(5)): each line's mount point,
// unescaped (\040 is a space), and file system type, in the file's order.
func ParseMountInfo(r io.Reader) ([]MountPoint, error) {
	var out []MountPoint
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// Fields are separated by single spaces; a path's own spaces,
		// tabs, newlines and backslashes are escaped, any other byte is
		// itself (strings.Fields would split at U+00A0).
		fields := strings.Split(sc.Text(), " ")
		if len(fields) < 5 || fields[4] == "" {
			continue
		}
		mp := MountPoint{Path: unescapeMountInfo(fields[4])}
		for i := 5; i+1 < len(fields); i++ {
			if fields[i] == "-" {
				mp.FSType = unescapeMountInfo(fields[i+1])
				break
			}
		}
		out = append(out, mp)
	}
	return out, sc.Err()
}

// unescapeMountInfo undoes mountinfo's octal escapes (\040 for a space,
// \011 tab, \012 newline, \134 backslash).
func unescapeMountInfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			v, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
			b.WriteByte(byte(v))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return len(s) == 3 && s[0] <= '3'
}

// Under returns the mount points of table at or below dir, deepest first
// (the order to unmount them in), mounts stacked at one path newest first.
func Under(table []MountPoint, dir string) []MountPoint {
	dir = filepath.Clean(dir)
	var out []MountPoint
	for i := len(table) - 1; i >= 0; i-- {
		if p := table[i].Path; p == dir || strings.HasPrefix(p, dir+"/") || dir == "/" {
			out = append(out, table[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i].Path, "/") > strings.Count(out[j].Path, "/")
	})
	return out
}
