package containerlogs

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// watchErrorRetries is how many watch errors one wait for a log change
// lets pass before it fails with the last (kubelet's errRetry).
const watchErrorRetries = 5

// defaultHub is the watcher ReadLogs's follows share. It holds an inotify
// instance only while some follow waits, and no goroutine otherwise.
var defaultHub = &watchHub{newWatcher: fsnotify.NewWatcher}

// watchHub shares one fsnotify watcher, and one watch per directory, among
// all the follows of a process: kubelet makes a watcher (an inotify
// instance) per follow, and the per-user limit on instances
// (fs.inotify.max_user_instances, often 128) then caps a node's concurrent
// follows. The watcher is made when the first follow subscribes and closed,
// with its goroutine, when the last leaves.
type watchHub struct {
	newWatcher func() (*fsnotify.Watcher, error)

	mu  sync.Mutex
	cur *watchSet // nil when no follow waits
}

// watchSet is one fsnotify watcher with its subscribers, by directory.
type watchSet struct {
	w    *fsnotify.Watcher
	dirs map[string]map[*watchSub]struct{}
	done chan struct{} // closed when dispatch has returned
}

// watchSub is one follow's subscription to its log's directory.
type watchSub struct {
	set    *watchSet
	dir    string
	base   string
	notify chan struct{} // capacity 1: something happened since take

	mu sync.Mutex
	ev watchEvents
}

// watchEvents is what happened to a subscription's directory since the
// last take.
type watchEvents struct {
	changed   bool  // a file of the directory was written, created, renamed, removed or chmod-ed
	recreated bool  // the log's own name was created
	errs      int   // watch errors
	lastErr   error // the last of them
}

// take returns and clears what happened.
func (s *watchSub) take() watchEvents {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.ev
	s.ev = watchEvents{}
	return ev
}

func (s *watchSub) post(f func(*watchEvents)) {
	s.mu.Lock()
	f(&s.ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// subscribe watches dir for a follow of the file base in it.
func (h *watchHub) subscribe(dir, base string) (*watchSub, error) {
	dir = filepath.Clean(dir)
	h.mu.Lock()
	set := h.cur
	if set == nil {
		w, err := h.newWatcher()
		if err != nil {
			h.mu.Unlock()
			return nil, fmt.Errorf("failed to create fsnotify watcher: %w", err)
		}
		set = &watchSet{w: w, dirs: map[string]map[*watchSub]struct{}{}, done: make(chan struct{})}
		go set.dispatch(&h.mu)
		h.cur = set
	}
	subs := set.dirs[dir]
	if subs == nil {
		if err := set.w.Add(dir); err != nil {
			unused := len(set.dirs) == 0
			if unused {
				h.cur = nil
			}
			h.mu.Unlock()
			if unused {
				set.close()
			}
			return nil, fmt.Errorf("failed to watch directory %q: %w", dir, err)
		}
		subs = map[*watchSub]struct{}{}
		set.dirs[dir] = subs
	}
	s := &watchSub{set: set, dir: dir, base: base, notify: make(chan struct{}, 1)}
	subs[s] = struct{}{}
	h.mu.Unlock()
	return s, nil
}

// unsubscribe ends s; the directory's watch goes with its last subscriber,
// the watcher and its goroutine with the set's last.
func (h *watchHub) unsubscribe(s *watchSub) {
	h.mu.Lock()
	set := s.set
	subs := set.dirs[s.dir]
	delete(subs, s)
	if len(subs) == 0 {
		delete(set.dirs, s.dir)
		if len(set.dirs) > 0 {
			_ = set.w.Remove(s.dir) // gone with the directory, maybe
		}
	}
	last := len(set.dirs) == 0
	if last && h.cur == set {
		h.cur = nil
	}
	h.mu.Unlock()
	if last {
		set.close()
	}
}

// close closes the watcher and waits for dispatch to return. It is called
// without the hub's lock, which dispatch takes.
func (set *watchSet) close() {
	_ = set.w.Close()
	<-set.done
}

// dispatch hands the watcher's events and errors to the subscribers of
// their directory until the watcher is closed. Like kubelet, a follow is
// woken by a write, create, rename, remove or chmod (one kind at a time);
// a create of its log's name means the runtime reopened the log.
func (set *watchSet) dispatch(mu *sync.Mutex) {
	defer close(set.done)
	events, errs := set.w.Events, set.w.Errors
	for events != nil || errs != nil {
		select {
		case e, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			switch e.Op {
			case fsnotify.Write, fsnotify.Rename, fsnotify.Remove, fsnotify.Chmod, fsnotify.Create:
			default:
				continue
			}
			name := filepath.Base(e.Name)
			mu.Lock()
			subs := set.dirs[filepath.Dir(e.Name)]
			if subs == nil {
				subs = set.dirs[e.Name] // the directory itself
			}
			for s := range subs {
				created := e.Op == fsnotify.Create && name == s.base
				s.post(func(ev *watchEvents) {
					ev.changed = true
					ev.recreated = ev.recreated || created
				})
			}
			mu.Unlock()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			mu.Lock()
			for _, subs := range set.dirs {
				for s := range subs {
					s.post(func(ev *watchEvents) {
						ev.errs++
						ev.lastErr = err
					})
				}
			}
			mu.Unlock()
		}
	}
}
