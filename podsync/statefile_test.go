package podsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podstart/podstart/internal/statefile"
	"github.com/podstart/podstart/podsync"
)

// returns runs f and fails the test if the deadline passes first (a read
// that waits, as an open of a FIFO with no writer did), rather than the
// test binary timing out. No sleep: only the deadline decides.
func returns(t *testing.T, f func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("did not return before the deadline: a read waited")
	}
}

// hostileRecords puts, at path, something that is not a record podstart
// wrote: a FIFO with no writer, a symlink to a valid record (valid is its
// content), a sparse 64 MiB file. Each case names the error it must give.
var hostileRecords = []struct {
	name string
	make func(t *testing.T, path, valid string)
	want error
}{
	{"FIFO", func(t *testing.T, path, _ string) {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}, statefile.ErrNotRegular},
	{"symlink to a valid record", func(t *testing.T, path, valid string) {
		target := filepath.Join(t.TempDir(), "record")
		if err := os.WriteFile(target, []byte(valid), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}, statefile.ErrNotRegular},
	{"64 MiB", func(t *testing.T, path, _ string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(64 << 20); err != nil {
			t.Fatal(err)
		}
	}, statefile.ErrTooLarge},
}

// A user-namespace record that is not a regular file podstart wrote, or is
// over its cap, is an invalid record (allocation stops, as for one that
// does not parse), never waited on, never followed.
func TestUserNamespaceHostileRecord(t *testing.T) {
	valid := `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`
	for _, tt := range hostileRecords {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "pods", "x")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.make(t, filepath.Join(dir, "userns"), valid)
			u, err := podsync.NewUserNamespaces(root, 0, 0, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			returns(t, func() { _, err = u.UserNamespace(usernsPod("y")) })
			if !errors.Is(err, podsync.ErrUserNamespace) || !errors.Is(err, tt.want) {
				t.Fatalf("UserNamespace = %v, want ErrUserNamespace and %v", err, tt.want)
			}
		})
	}
}
