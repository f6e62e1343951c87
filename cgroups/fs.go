package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FS is the cgroup file system the Manager writes: a cgroup mount's
// directory tree. Paths are slash-separated and relative to its root
// ("memory/kubepods/burstable", "kubepods/burstable" on cgroup v2); "" is
// the root. A missing directory or file is an error matching
// fs.ErrNotExist; a cgroup that cannot be removed yet, ErrBusy.
type FS interface {
	// Mkdir makes the cgroup directory dir, whose parent exists; an
	// existing one is no error.
	Mkdir(dir string) error
	// Rmdir removes the cgroup directory dir, which has no child cgroups;
	// a missing one is no error.
	Rmdir(dir string) error
	// ReadFile reads a cgroup file, without its trailing newline.
	ReadFile(file string) (string, error)
	// WriteFile writes value to an existing cgroup file.
	WriteFile(file, value string) error
	// Subdirs lists the names of dir's child cgroups, sorted.
	Subdirs(dir string) ([]string, error)
	// Pids lists the processes attached to the cgroup dir itself (its
	// cgroup.procs); a missing dir has none.
	Pids(dir string) ([]int, error)
}

// Tree is a cgroup file system and its layout.
type Tree struct {
	FS FS
	// V2: the FS is a unified (cgroup v2) hierarchy. Otherwise it holds
	// one directory per cgroup v1 hierarchy, named by its controllers
	// ("cpu", "memory", "cpu,cpuacct", "systemd" for name=systemd).
	V2 bool
	// Hierarchies are those directories (v1 only): each cgroup is made in
	// every one of them, as kubelet's libcontainer manager does.
	Hierarchies []string
	// Unified is the directory of a hybrid v1 host's cgroup2 mount
	// ("unified"), or "". It holds no controller, so nothing is written
	// there, but runc makes each container's cgroup in it too: a pod's
	// cgroup is removed from it with the others, as kubelet's
	// libcontainer manager removes it.
	Unified string
}

// hierarchy returns the v1 hierarchy directory holding controller.
func (t Tree) hierarchy(controller string) (string, bool) {
	for _, h := range t.Hierarchies {
		if h == controller {
			return h, true
		}
	}
	for _, h := range t.Hierarchies {
		if slices.Contains(strings.Split(h, ","), controller) {
			return h, true
		}
	}
	return "", false
}

// DefaultRoot is where cgroup file systems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// DetectTree reads the cgroup mount at root (DefaultRoot when ""): cgroup
// v2 when root is a cgroup2 file system, else the cgroup v1 hierarchies
// mounted in its subdirectories (a cgroup2 "unified" directory of a
// hybrid host is not one of them, as for kubelet, but is Tree.Unified).
func DetectTree(root string) (Tree, error) {
	if root == "" {
		root = DefaultRoot
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return Tree{}, fmt.Errorf("cgroups: statfs %s: %w", root, err)
	}
	t := Tree{FS: NewOSFS(root)}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		t.V2 = true
		return t, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return Tree{}, fmt.Errorf("cgroups: %w", err)
	}
	for _, e := range entries {
		var hs unix.Statfs_t
		if err := unix.Statfs(filepath.Join(root, e.Name()), &hs); err != nil {
			continue
		}
		if hs.Type == unix.CGROUP2_SUPER_MAGIC {
			t.Unified = e.Name()
		}
		if hs.Type != unix.CGROUP_SUPER_MAGIC {
			continue
		}
		t.Hierarchies = append(t.Hierarchies, e.Name())
	}
	if len(t.Hierarchies) == 0 {
		return Tree{}, fmt.Errorf("%w: no cgroup v1 hierarchy or cgroup2 mount at %s", ErrMissingController, root)
	}
	return t, nil
}

// OSFS is the FS of the host: a directory of a cgroup mount.
type OSFS struct{ root string }

// NewOSFS returns the FS rooted at root (a cgroup mount, or the directory
// of a host's cgroup v1 mounts).
func NewOSFS(root string) *OSFS { return &OSFS{root: root} }

func (o *OSFS) path(p string) (string, error) {
	c := path.Clean("/" + p)
	if c != "/"+strings.TrimPrefix(p, "/") && p != "" {
		return "", fmt.Errorf("%w: path %q", ErrInvalidName, p)
	}
	return filepath.Join(o.root, filepath.FromSlash(c)), nil
}

// Mkdir implements FS.
func (o *OSFS) Mkdir(dir string) error {
	p, err := o.path(dir)
	if err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Rmdir implements FS.
func (o *OSFS) Rmdir(dir string) error {
	p, err := o.path(dir)
	if err != nil {
		return err
	}
	err = unix.Rmdir(p)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENOTEMPTY):
		return fmt.Errorf("%w: rmdir %s: %v", ErrBusy, p, err)
	}
	return &fs.PathError{Op: "rmdir", Path: p, Err: err}
}

// ReadFile implements FS.
func (o *OSFS) ReadFile(file string) (string, error) {
	p, err := o.path(file)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	return strings.TrimRight(string(b), "\n"), err
}

// WriteFile implements FS: the file is opened for writing, never created
// (the kernel makes cgroup files).
func (o *OSFS) WriteFile(file, value string) error {
	p, err := o.path(file)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	return f.Close()
}

// Subdirs implements FS.
func (o *OSFS) Subdirs(dir string) ([]string, error) {
	p, err := o.path(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Pids implements FS.
func (o *OSFS) Pids(dir string) ([]int, error) {
	p, err := o.path(path.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if t := s.Text(); t != "" {
			pid, err := strconv.Atoi(t)
			if err != nil {
				return nil, fmt.Errorf("cgroups: %s: unexpected line %q", p, t)
			}
			out = append(out, pid)
		}
	}
	return out, s.Err()
}

// KillProcess sends SIGKILL to pid; a process already gone is no error.
// It is the Manager's default way to kill what is left in a pod's cgroup.
func KillProcess(pid int) error {
	if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	return nil
}
