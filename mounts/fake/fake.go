// Package fake is a mounts.Mounter in memory, for tests that exercise
// memory-backed volumes without the privilege to mount: it keeps a mount
// table, records each tmpfs's size, can refuse mounts as an unprivileged
// process is refused, and can hold mounts that podstart did not make.
// Directories are not touched: a "mounted" directory stays an ordinary
// one, so what is written into it lands on disk.
package fake

import (
	"fmt"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/podstart/podstart/mounts"
)

// Tmpfs is one tmpfs the fake mounted.
type Tmpfs struct {
	Path string
	Size int64
}

// Mounter is a mounts.Mounter in memory; safe for concurrent use.
type Mounter struct {
	mu           sync.Mutex
	table        []entry
	unprivileged bool
	mountErr     error
	unmountErr   map[string]error
	mounts       int
	unmounts     int
}

type entry struct {
	mounts.MountPoint
	size int64
}

var _ mounts.Mounter = (*Mounter)(nil)

// New returns a Mounter with an empty mount table.
func New() *Mounter { return &Mounter{unmountErr: map[string]error{}} }

// Unprivileged makes every later MountTmpfs and Unmount fail as they do
// for a process without CAP_SYS_ADMIN (mounts.ErrMountNotPermitted,
// EPERM).
func (m *Mounter) Unprivileged() *Mounter {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unprivileged = true
	return m
}

// FailMount makes every later MountTmpfs return err (nil: succeed again).
func (m *Mounter) FailMount(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mountErr = err
}

// FailUnmount makes Unmount of dir return err (nil: succeed again), as
// for a busy mount.
func (m *Mounter) FailUnmount(dir string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unmountErr[filepath.Clean(dir)] = err
}

// Add puts a mount podstart did not make into the table (a CSI volume, a
// bind mount).
func (m *Mounter) Add(mp mounts.MountPoint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mp.Path = filepath.Clean(mp.Path)
	m.table = append(m.table, entry{MountPoint: mp})
}

// MountTmpfs implements mounts.Mounter.
func (m *Mounter) MountTmpfs(dir string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unprivileged {
		return fmt.Errorf("mount tmpfs at %s: %w: %w", dir, mounts.ErrMountNotPermitted, syscall.EPERM)
	}
	if m.mountErr != nil {
		return m.mountErr
	}
	m.mounts++
	m.table = append(m.table, entry{MountPoint: mounts.MountPoint{Path: filepath.Clean(dir), FSType: mounts.FSTypeTmpfs}, size: size})
	return nil
}

// Unmount implements mounts.Mounter: the newest mount at dir goes.
func (m *Mounter) Unmount(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	if m.unprivileged {
		return fmt.Errorf("unmount %s: %w: %w", dir, mounts.ErrMountNotPermitted, syscall.EPERM)
	}
	if err := m.unmountErr[dir]; err != nil {
		return err
	}
	for i := len(m.table) - 1; i >= 0; i-- {
		if m.table[i].Path == dir {
			m.table = append(m.table[:i], m.table[i+1:]...)
			m.unmounts++
			return nil
		}
	}
	return fmt.Errorf("unmount %s: %w", dir, syscall.EINVAL)
}

// MountPoint implements mounts.Mounter from the table alone.
func (m *Mounter) MountPoint(dir string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	for i := len(m.table) - 1; i >= 0; i-- {
		if m.table[i].Path == dir {
			return m.table[i].FSType, true, nil
		}
	}
	return "", false, nil
}

// List implements mounts.Mounter.
func (m *Mounter) List() ([]mounts.MountPoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]mounts.MountPoint, len(m.table))
	for i, e := range m.table {
		out[i] = e.MountPoint
	}
	return out, nil
}

// Tmpfs returns the tmpfs mounts in the table, in mount order.
func (m *Mounter) Tmpfs() []Tmpfs {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Tmpfs
	for _, e := range m.table {
		if e.FSType == mounts.FSTypeTmpfs {
			out = append(out, Tmpfs{Path: e.Path, Size: e.size})
		}
	}
	return out
}

// Counts returns how many tmpfs mounts and unmounts succeeded.
func (m *Mounter) Counts() (mountCount, unmountCount int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mounts, m.unmounts
}
