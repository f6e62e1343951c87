package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
)

// fileID identifies one file: a socket replaced at the same path has
// another inode or modification time.
type fileID struct {
	dev, ino uint64
	mtime    int64
}

// watcher is kubelet's pluginwatcher: it keeps the desired state (the
// sockets in the directory tree) from an initial walk and fsnotify events.
type watcher struct {
	m  *Manager
	fs *fsnotify.Watcher
}

func (w *watcher) close() { _ = w.fs.Close() }

// startWatch validates and creates the directory, watches it and walks it.
func (m *Manager) startWatch(ctx context.Context) (*watcher, error) {
	if err := m.ensureDir(); err != nil {
		return nil, err
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("failed to start plugin fsWatcher, err: %w", err)
	}
	w := &watcher{m: m, fs: fsw}
	logr.FromContextOrDiscard(ctx).V(2).Info("Plugin Watcher Start", "path", m.dir)
	if err := w.traverse(ctx, m.dir, nil); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// ensureDir creates the directory if missing and checks it is a directory,
// not a symlink.
func (m *Manager) ensureDir() error {
	fi, err := os.Lstat(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(m.dir, DirMode); err != nil {
			return fmt.Errorf("error (re-)creating root %s: %w", m.dir, err)
		}
		fi, err = os.Lstat(m.dir)
	}
	if err != nil {
		return fmt.Errorf("error (re-)creating root %s: %w", m.dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symlink", ErrInvalidDir, m.dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrInvalidDir, m.dir)
	}
	return nil
}

// ignored reports whether a name is ignored: kubelet's rule, names
// starting with '.' (files and, in podstart, directories too).
func ignored(path string) bool { return strings.HasPrefix(filepath.Base(path), ".") }

// traverse watches dir and walks it: subdirectories are watched, sockets
// added to the desired state (or to found, when a rescan collects them).
// Only an error on dir itself is returned, as kubelet.
func (w *watcher) traverse(ctx context.Context, dir string, found map[string]bool) error {
	log := logr.FromContextOrDiscard(ctx)
	if err := w.fs.Add(dir); err != nil {
		return fmt.Errorf("failed to watch %s, err: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return fmt.Errorf("error accessing path: %s error: %w", path, err)
			}
			log.Error(err, "Error accessing path", "path", path)
			return nil
		}
		if path == dir {
			return nil
		}
		if ignored(path) {
			log.V(5).Info("Ignoring file (starts with '.')", "path", path)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if err := w.fs.Add(path); err != nil {
				log.Error(err, "Failed to watch directory", "path", path)
				return filepath.SkipDir
			}
			return nil
		}
		w.file(ctx, path, found)
		return nil
	})
}

// file adds path to the desired state if it is a unix socket, and says why
// not otherwise. Symlinks are refused (not followed), whatever they name.
func (w *watcher) file(ctx context.Context, path string, found map[string]bool) {
	log := logr.FromContextOrDiscard(ctx)
	fi, err := os.Lstat(path)
	if err != nil {
		// Gone already: its Remove event follows.
		log.V(5).Info("Ignoring file that cannot be examined", "path", path, "err", err.Error())
		return
	}
	switch mode := fi.Mode(); {
	case mode&fs.ModeSymlink != 0:
		log.Info("Ignoring symlink in the plugin registration directory: registration sockets must be sockets, not links", "path", path)
		w.forget(path) // a socket replaced by a link is gone
		return
	case mode&fs.ModeSocket == 0:
		log.V(5).Info("Ignoring non socket file", "path", path, "mode", mode.String())
		w.forget(path)
		return
	}
	if found != nil {
		found[path] = true
	}
	id := idOf(fi)
	m := w.m
	m.mu.Lock()
	d, ok := m.desired[path]
	if !ok || d.id != id {
		// New or replaced: a new generation, registered anew (kubelet's
		// new timestamp and UUID).
		m.gen++
		m.desired[path] = desiredSocket{gen: m.gen, id: id}
	}
	m.mu.Unlock()
	if !ok || d.id != id {
		log.V(2).Info("Adding socket path or updating timestamp to desired state cache", "path", path)
	}
}

// forget drops path (a file, not a directory) from the desired state.
func (w *watcher) forget(path string) {
	w.m.mu.Lock()
	delete(w.m.desired, path)
	w.m.mu.Unlock()
}

// handle applies one fsnotify event to the desired state.
func (w *watcher) handle(ctx context.Context, ev fsnotify.Event) {
	log := logr.FromContextOrDiscard(ctx)
	log.V(6).Info("Handling event", "event", ev.String())
	switch {
	case ev.Has(fsnotify.Create):
		if ignored(ev.Name) {
			log.V(5).Info("Ignoring file (starts with '.')", "path", ev.Name)
			return
		}
		fi, err := os.Lstat(ev.Name)
		if err != nil {
			log.V(5).Info("Ignoring created file that is gone", "path", ev.Name)
			return
		}
		if fi.IsDir() {
			if err := w.traverse(ctx, ev.Name, nil); err != nil {
				log.Error(err, "Error when handling create event", "event", ev.String())
			}
			return
		}
		w.file(ctx, ev.Name, nil)
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		// A rename reports the old name: that path is gone as well.
		if _, err := os.Lstat(ev.Name); err == nil {
			return // re-created since: its Create event follows
		}
		w.remove(ctx, ev.Name)
		w.unwatch(ev.Name)
	}
}

// remove drops path, and everything beneath it when it was a directory,
// from the desired state.
func (w *watcher) remove(ctx context.Context, path string) {
	m := w.m
	m.mu.Lock()
	var gone []string
	for p := range m.desired {
		if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
			delete(m.desired, p)
			gone = append(gone, p)
		}
	}
	m.mu.Unlock()
	for _, p := range gone {
		logr.FromContextOrDiscard(ctx).V(2).Info("Removing socket path from desired state cache", "path", p)
	}
}

// unwatch stops watching path and the directories beneath it, if watched:
// a directory moved out of the tree keeps its inotify watch otherwise.
func (w *watcher) unwatch(path string) {
	for _, p := range w.fs.WatchList() {
		if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
			_ = w.fs.Remove(p)
		}
	}
}

// handleError logs fsnotify's errors; after lost events (an overflow) the
// tree is walked again and the desired state made to agree with it.
func (w *watcher) handleError(ctx context.Context, err error) {
	if err == nil {
		return
	}
	log := logr.FromContextOrDiscard(ctx)
	log.Error(err, "FsWatcher received error")
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		return
	}
	w.rescan(ctx)
}

// rescan walks the tree again: sockets found are added (kept when
// unchanged), sockets in the desired state but no longer found are removed.
func (w *watcher) rescan(ctx context.Context) {
	found := map[string]bool{}
	if err := w.traverse(ctx, w.m.dir, found); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Failed to traverse plugin socket path", "path", w.m.dir)
		return
	}
	m := w.m
	m.mu.Lock()
	for p := range m.desired {
		if !found[p] {
			delete(m.desired, p)
		}
	}
	m.mu.Unlock()
}
