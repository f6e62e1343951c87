package pluginmanager

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsnotify/fsnotify"
)

func newWatcher(t *testing.T) (*Manager, *watcher) {
	t.Helper()
	m, err := New(filepath.Join(t.TempDir(), DirName))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ensureDir(); err != nil {
		t.Fatal(err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{m: m, fs: fsw}
	t.Cleanup(w.close)
	return m, w
}

func listen(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// A socket seen twice (a new directory's walk and its create event) keeps
// its generation; replaced, it gets a new one.
func TestSocketSeenTwiceKeepsGeneration(t *testing.T) {
	m, w := newWatcher(t)
	ctx := context.Background()
	path := filepath.Join(m.dir, "a.sock")
	listen(t, path)
	w.file(ctx, path, nil)
	first := m.desired[path]
	w.file(ctx, path, nil)
	if got := m.desired[path]; got != first {
		t.Fatalf("seen twice: %+v, then %+v", first, got)
	}
	// Replaced: the old file moved away keeps its inode in use, so the new
	// one has another.
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	listen(t, path)
	w.file(ctx, path, nil)
	if got := m.desired[path]; got.gen == first.gen {
		t.Fatalf("replaced socket kept generation %d", got.gen)
	}
}

// After lost events, a rescan makes the desired state agree with the tree:
// a socket gone is dropped, a new one added, an unchanged one kept.
func TestRescanAfterOverflow(t *testing.T) {
	m, w := newWatcher(t)
	ctx := context.Background()
	kept := filepath.Join(m.dir, "kept.sock")
	listen(t, kept)
	w.file(ctx, kept, nil)
	keptGen := m.desired[kept].gen
	m.desired[filepath.Join(m.dir, "gone.sock")] = desiredSocket{gen: 99}
	if err := os.Mkdir(filepath.Join(m.dir, "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	added := filepath.Join(m.dir, "d", "new.sock")
	listen(t, added)

	w.handleError(ctx, fsnotify.ErrEventOverflow)
	if len(m.desired) != 2 || m.desired[kept].gen != keptGen || m.desired[added].gen == 0 {
		t.Errorf("desired after rescan: %+v", m.desired)
	}
}
