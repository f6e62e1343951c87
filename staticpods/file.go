package staticpods

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
)

// ErrBadConfig matches a source built with a missing path, URL or node name.
var ErrBadConfig = errors.New("staticpods: bad source configuration")

// FileSource is kubelet's file pod source (staticPodPath): a directory of
// manifests, or one manifest file, watched with inotify and read again
// every period.
type FileSource struct {
	path string
	node string
	o    options
}

// NewFileSource returns the source of the manifests at path for the node
// nodeName. Nothing is read until Run.
func NewFileSource(path, nodeName string, opts ...Option) (*FileSource, error) {
	path = strings.TrimRight(path, string(os.PathSeparator))
	if path == "" || nodeName == "" {
		return nil, fmt.Errorf("%w: path and node name are required", ErrBadConfig)
	}
	o := defaultOptions(DefaultFileCheckFrequency)
	for _, opt := range opts {
		opt(&o)
	}
	return &FileSource{path: path, node: nodeName, o: o}, nil
}

// Read reads the source once, as kubelet's listConfig: for a directory,
// every entry not starting with "." in name order (symbolic links
// followed, subdirectories not entered), each a single pod; for a file,
// that file. Refused manifests are returned by path, the rest kept. When
// two manifests define the same namespace and name, the later file's pod
// is kept (kubelet's store keeps the last) and the earlier refused with
// ErrDuplicateName. ok is false when nothing could be read and the pods
// should be left as they are (kubelet sends no update then); a missing
// path reads as no pods.
func (s *FileSource) Read() (pods []*corev1.Pod, refused []Refusal, ok bool) {
	entries, refused, ok := s.read()
	pods, dups := dedupe(entries)
	return pods, append(refused, dups...), ok
}

// entry is one manifest read: its path and its pod.
type entry struct {
	path string
	pod  *corev1.Pod
}

func (s *FileSource) read() (entries []entry, refused []Refusal, ok bool) {
	fi, err := os.Stat(s.path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, []Refusal{{s.path, errors.New("path does not exist, ignoring")}}, true
		}
		return nil, []Refusal{{s.path, err}}, false
	}
	switch {
	case fi.Mode().IsDir():
		return s.readDir()
	case fi.Mode().IsRegular():
		pod, err := s.readFile(s.path)
		if err != nil {
			return nil, []Refusal{{s.path, err}}, false
		}
		return []entry{{s.path, pod}}, nil, true
	default:
		return nil, []Refusal{{s.path, ErrNotRegular}}, false
	}
}

func (s *FileSource) readDir() (entries []entry, refused []Refusal, ok bool) {
	des, err := os.ReadDir(s.path)
	if err != nil {
		return nil, []Refusal{{s.path, err}}, false
	}
	var names []string
	for _, e := range des {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, filepath.Join(s.path, e.Name()))
		}
	}
	sort.Strings(names)
	for _, p := range names {
		fi, err := os.Stat(p)
		if err != nil {
			refused = append(refused, Refusal{p, err})
			continue
		}
		switch {
		case fi.Mode().IsDir():
			refused = append(refused, Refusal{p, errors.New("provided manifest path is a directory, not recursing into manifest path")})
			continue
		case !fi.Mode().IsRegular():
			refused = append(refused, Refusal{p, ErrNotRegular})
			continue
		}
		pod, err := s.readFile(p)
		if err != nil {
			if !os.IsNotExist(err) {
				refused = append(refused, Refusal{p, err})
			}
			continue
		}
		entries = append(entries, entry{p, pod})
	}
	return entries, refused, true
}

// dedupe keeps, of entries (in path order) defining the same namespace and
// name, the last, as kubelet's store does.
func dedupe(entries []entry) (pods []*corev1.Pod, dups []Refusal) {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	byName := map[string]int{}
	var paths []string
	for _, e := range entries {
		key := e.pod.Namespace + "/" + e.pod.Name
		if i, dup := byName[key]; dup {
			dups = append(dups, Refusal{paths[i], fmt.Errorf("%w %q: also defined by %s, which is kept", ErrDuplicateName, key, e.path)})
			pods[i], paths[i] = e.pod, e.path
			continue
		}
		byName[key] = len(pods)
		pods = append(pods, e.pod)
		paths = append(paths, e.path)
	}
	return pods, dups
}

// readFile reads one manifest: opened without blocking (a FIFO swapped in
// after the stat is not waited on), refused unless a regular file, at most
// MaxManifestSize bytes.
func (s *FileSource) readFile(p string) (*corev1.Pod, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	data, err := readAtMost(f, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	pod, parsed, err := DecodePod(data, Origin{Source: SourceFile, Location: p, NodeName: s.node})
	if err != nil && !parsed {
		return nil, &manifestError{msg: fmt.Sprintf("couldn't parse as pod(%v), please check config file", err), kind: ErrInvalidManifest}
	}
	return pod, err
}

// readAtMost is k8s.io/utils/io.ReadAtMost: ErrTooLarge once limit bytes
// are read.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	lr := &io.LimitedReader{R: r, N: limit}
	data, err := io.ReadAll(lr)
	if err != nil {
		return nil, err
	}
	if lr.N <= 0 {
		return nil, &manifestError{msg: ErrTooLarge.Error(), kind: ErrTooLarge}
	}
	return data, nil
}

// Run reads the source at once, then again on every inotify event for a
// name not starting with "." and every period, and sends the changes to
// out (see Update) until ctx ends; it returns ctx's error. A change on
// disk is seen in full on the read it triggers: a changed manifest is a new
// UID, so its old pod is removed and the new one added.
func (s *FileSource) Run(ctx context.Context, out chan<- Update) error {
	m := newMerger(SourceFile, s.o.clock.Now)
	ticker := s.o.clock.NewTicker(s.o.period)
	defer ticker.Stop()
	var w *fsnotify.Watcher
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	watch := func() {
		if w != nil {
			return
		}
		nw, err := fsnotify.NewWatcher()
		if err != nil {
			s.o.onRefused(Refusal{s.path, fmt.Errorf("unable to create inotify: %w", err)})
			return
		}
		if err := nw.Add(s.path); err != nil {
			nw.Close()
			if !os.IsNotExist(err) {
				s.o.onRefused(Refusal{s.path, fmt.Errorf("unable to create inotify for path %q: %w", s.path, err)})
			}
			return
		}
		w = nw
	}
	unwatch := func() {
		if w != nil {
			w.Close()
			w = nil
		}
	}
	// last holds the pods of the last read by path: a read triggered by
	// an inotify event keeps the pod of a manifest it could not use (a file
	// caught half written), as kubelet's watch handler leaves its store
	// alone on an error; the periodic read drops it, as kubelet's does.
	last := map[string]*corev1.Pod{}
	list := func(event bool) error {
		entries, refused, ok := s.read()
		for _, r := range refused {
			if old, kept := last[r.Location]; event && kept && !errors.Is(r.Err, os.ErrNotExist) {
				entries = append(entries, entry{r.Location, old})
			}
		}
		pods, dupRefusals := dedupe(entries)
		for _, r := range append(refused, dupRefusals...) {
			s.o.onRefused(r)
		}
		if ok {
			clear(last)
			for _, e := range entries {
				last[e.path] = e.pod
			}
			updates, dups := m.merge(pods)
			for _, d := range dups {
				s.o.onRefused(Refusal{s.path, fmt.Errorf("%w %q", ErrDuplicateName, d.Namespace+"/"+d.Name)})
			}
			for _, u := range updates {
				select {
				case out <- u:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if s.o.listed != nil {
			s.o.listed()
		}
		return nil
	}
	watch()
	if err := list(false); err != nil {
		return err
	}
	for {
		event := false
		var events chan fsnotify.Event
		var errs chan error
		if w != nil {
			events, errs = w.Events, w.Errors
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
			watch()
		case ev, open := <-events:
			event = true
			if !open {
				unwatch()
				continue
			}
			if ev.Name == s.path && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
				// The path itself went (or was replaced, by a symbolic
				// link too): watch whatever is there now.
				unwatch()
				watch()
			} else if strings.HasPrefix(filepath.Base(ev.Name), ".") || ev.Op == 0 {
				continue
			}
		case err, open := <-errs:
			if open {
				s.o.onRefused(Refusal{s.path, fmt.Errorf("error while watching %q: %w", s.path, err)})
			}
			unwatch()
			watch()
		}
		if err := list(event); err != nil {
			return err
		}
	}
}
