package containerlogs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"
)

func TestWatchHub(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := &watchHub{newWatcher: fsnotify.NewWatcher}
	a, b := t.TempDir(), t.TempDir()

	// A directory that cannot be watched leaves no watcher behind.
	if _, err := h.subscribe(filepath.Join(a, "missing"), "0.log"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("subscribe(missing) = %v, want os.ErrNotExist", err)
	}
	if h.cur != nil {
		t.Fatal("a watcher is left after a failed subscribe")
	}

	s1, err := h.subscribe(a, "0.log")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := h.subscribe(a+"/", "1.log")
	if err != nil {
		t.Fatal(err)
	}
	s3, err := h.subscribe(b, "0.log")
	if err != nil {
		t.Fatal(err)
	}
	if s1.set != s2.set || s1.set != s3.set || len(s1.set.dirs) != 2 {
		t.Fatalf("subscriptions do not share one watcher with two watches")
	}
	if err := os.WriteFile(filepath.Join(a, "0.log"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	<-s1.notify
	<-s2.notify
	// The create event may come apart from the write's, or with it.
	for ev := s1.take(); !ev.recreated; ev = s1.take() {
		<-s1.notify
	}
	select {
	case <-s3.notify:
		t.Fatal("a follow of another directory was woken")
	default:
	}
	h.unsubscribe(s1)
	h.unsubscribe(s3)
	if h.cur == nil || len(h.cur.dirs) != 1 {
		t.Fatal("the watcher went with subscribers left")
	}
	h.unsubscribe(s2)
	if h.cur != nil {
		t.Fatal("the watcher is left with no subscriber")
	}
}
