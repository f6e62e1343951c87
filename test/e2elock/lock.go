// Package e2elock keeps a test that disrupts the shared containerd (one
// that kills it) from running while another test process uses it: go test
// runs packages in parallel, and the e2e and kubelet tiers share one
// containerd. Every process using containerd holds a shared lock for its
// life; a disruptive test takes it exclusively for as long as it needs.
package e2elock

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

var (
	once sync.Once
	file *os.File
	err  error
)

// Shared takes the shared lock in dir for the rest of the process's life
// (again: no-op).
func Shared(dir string) error {
	once.Do(func() {
		file, err = os.OpenFile(filepath.Join(dir, "containerd.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err == nil {
			err = syscall.Flock(int(file.Fd()), syscall.LOCK_SH)
		}
	})
	return err
}

// Exclusive waits until no other process holds the lock, holds it alone,
// and returns the function that turns it shared again.
func Exclusive(dir string) (release func(), err error) {
	if err := Shared(dir); err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	return func() { syscall.Flock(int(file.Fd()), syscall.LOCK_SH) }, nil
}

// TryExclusive is Exclusive without the wait: ok is false, and the lock
// shared again, when another process holds it.
func TryExclusive(dir string) (release func(), ok bool, err error) {
	if err := Shared(dir); err != nil {
		return nil, false, err
	}
	fd := int(file.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// A failed conversion has dropped the shared lock (flock(2)):
		// take it again.
		if shErr := syscall.Flock(fd, syscall.LOCK_SH); shErr != nil {
			return nil, false, shErr
		}
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { syscall.Flock(fd, syscall.LOCK_SH) }, true, nil
}
