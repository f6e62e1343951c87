package containerlogs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenLogFIFORace: a regular log replaced by a FIFO between openLog's
// Lstat and its open is refused with ErrNotRegular without waiting for a
// writer (the open is non-blocking; the test's own timeout catches a
// hang).
func TestOpenLogFIFORace(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "0.log")
	if err := os.WriteFile(live, []byte("2026-11-26T17:00:00Z stdout F x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	afterLstat = func(string) {
		if err := os.Remove(live); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(live, 0o600); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterLstat = nil }()
	f, err := openLog(root, "0.log")
	if err == nil {
		f.Close()
	}
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("openLog of a log replaced by a FIFO = %v, want ErrNotRegular", err)
	}
}
