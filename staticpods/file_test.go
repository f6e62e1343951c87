package staticpods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func manifest(name, image string) string {
	return strings.NewReplacer("name: web", "name: "+name, "image: nginx", "image: "+image).Replace(webPod)
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func refusedBy(refused []Refusal) map[string]error {
	m := map[string]error{}
	for _, r := range refused {
		m[filepath.Base(r.Location)] = r.Err
	}
	return m
}

func TestReadDirRules(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx"))
	write(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "nginx"))
	write(t, filepath.Join(dir, "bad.yaml"), "apiVersion: v1\nkind: Pod\n")
	write(t, filepath.Join(dir, "noimage.yaml"), manifest("noimage", `""`))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "s.yaml"), manifest("s", "nginx"))
	// A symbolic link to a manifest is followed, as kubelet's os.Stat.
	other := t.TempDir()
	write(t, filepath.Join(other, "target.yaml"), manifest("linked", "nginx"))
	if err := os.Symlink(filepath.Join(other, "target.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "missing"), filepath.Join(dir, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	// A FIFO is never opened (opening it would block).
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Huge: exactly the limit is refused, as kubelet's ReadAtMost.
	big := manifest("big", "nginx") + "#" + strings.Repeat("x", MaxManifestSize-len(manifest("big", "nginx"))-2) + "\n"
	write(t, filepath.Join(dir, "big.yaml"), big)
	// Same name twice: the later file is kept.
	write(t, filepath.Join(dir, "d1.yaml"), manifest("dup", "nginx:1"))
	write(t, filepath.Join(dir, "d2.yaml"), manifest("dup", "nginx:2"))
	// A hostPath of the manifest directory is accepted, as kubelet does.
	write(t, filepath.Join(dir, "selfmount.yaml"), manifest("selfmount", "nginx")+"  volumes:\n  - name: m\n    hostPath: {path: "+dir+"}\n")

	s, err := NewFileSource(dir+"/", "n")
	if err != nil {
		t.Fatal(err)
	}
	pods, refused, ok := s.Read()
	if !ok {
		t.Fatal("not ok")
	}
	got := podNames(pods)
	want := "a-n dup-n linked-n selfmount-n"
	if got != want {
		t.Errorf("pods %q, want %q", got, want)
	}
	for _, p := range pods {
		if p.Name == "dup-n" && p.Spec.Containers[0].Image != "nginx:2" {
			t.Errorf("duplicate: kept %s, want the later file's", p.Spec.Containers[0].Image)
		}
	}
	r := refusedBy(refused)
	for file, want := range map[string]error{
		"bad.yaml": ErrInvalidManifest, "noimage.yaml": ErrInvalidManifest, "fifo.yaml": ErrNotRegular,
		"big.yaml": ErrTooLarge, "d1.yaml": ErrDuplicateName,
	} {
		if !errors.Is(r[file], want) {
			t.Errorf("%s: %v, want %v", file, r[file], want)
		}
	}
	if r["dangling.yaml"] == nil || r["sub"] == nil {
		t.Errorf("dangling link and subdirectory not reported: %v", r)
	}
	if _, ok := r[".hidden.yaml"]; ok || len(refused) != 7 {
		t.Errorf("refused %v", refused)
	}
	if !strings.Contains(r["big.yaml"].Error(), "the read limit is reached") {
		t.Errorf("kubelet's message: %v", r["big.yaml"])
	}
}

func TestReadSingleFileAndMissingPath(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "pod.yaml")
	write(t, f, manifest("one", "nginx"))
	s, _ := NewFileSource(f, "n")
	pods, _, ok := s.Read()
	if !ok || podNames(pods) != "one-n" {
		t.Fatalf("single file: %v %s", ok, podNames(pods))
	}
	// A single file turning invalid keeps its pod (no update).
	write(t, f, "garbage: [")
	if _, refused, ok := s.Read(); ok || len(refused) != 1 {
		t.Errorf("invalid single file: ok %v refused %v", ok, refused)
	}
	// A missing path is no pods.
	s, _ = NewFileSource(filepath.Join(dir, "none"), "n")
	if pods, _, ok := s.Read(); !ok || len(pods) != 0 {
		t.Errorf("missing path: ok %v pods %d", ok, len(pods))
	}
	if _, err := NewFileSource("", "n"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("empty path: %v", err)
	}
}

// runSource runs s, counting its reads; it returns the updates channel
// and a channel receiving one value per read.
func runSource(t *testing.T, run func(context.Context, chan<- Update) error) (<-chan Update, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Update, 100)
	done := make(chan error, 1)
	go func() { done <- run(ctx, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
	})
	return out, cancel
}

func next(t *testing.T, out <-chan Update) Update {
	t.Helper()
	select {
	case u := <-out:
		return u
	case <-time.After(time.Minute):
		t.Fatal("no update")
		return Update{}
	}
}

func TestFileSourceRunWatches(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx"))
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	s, _ := NewFileSource(dir, "n", WithClock(clk))
	out, _ := runSource(t, s.Run)

	u := next(t, out)
	if u.Op != OpAdd || podNames(u.Pods) != "a-n" {
		t.Fatalf("first: %v %s", u.Op, podNames(u.Pods))
	}
	a := u.Pods[0]
	if a.Annotations[ConfigSourceAnnotation] != "file" || a.Annotations[ConfigSeenAnnotation] != "2026-12-02T08:00:00.000000000Z" {
		t.Errorf("annotations %v", a.Annotations)
	}
	// A changed manifest: the old UID removed, the new added.
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:2"))
	u = next(t, out)
	if u.Op != OpRemove || u.Pods[0].UID != a.UID {
		t.Fatalf("change: %v %v", u.Op, u.Pods)
	}
	u = next(t, out)
	if u.Op != OpAdd || u.Pods[0].UID == a.UID || u.Pods[0].Spec.Containers[0].Image != "nginx:2" {
		t.Fatalf("change: %v %v", u.Op, u.Pods)
	}
	// Removing the manifest removes the pod.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if u = next(t, out); u.Op != OpRemove || podNames(u.Pods) != "a-n" {
		t.Fatalf("remove: %v %s", u.Op, podNames(u.Pods))
	}
}

func TestFileSourceDirReplacedBySymlink(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "manifests")
	other := filepath.Join(root, "other")
	for _, d := range []string{dir, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx"))
	write(t, filepath.Join(other, "b.yaml"), manifest("b", "nginx"))
	clk := clocktesting.NewFakeClock(time.Now())
	reads := make(chan struct{}, 100)
	s, _ := NewFileSource(dir, "n", WithClock(clk), func(o *options) {
		o.listed = func() {
			select {
			case reads <- struct{}{}:
			default:
			}
		}
	})
	out, _ := runSource(t, s.Run)
	if u := next(t, out); podNames(u.Pods) != "a-n" {
		t.Fatalf("first %s", podNames(u.Pods))
	}
	<-reads
	// Swap the directory for a link to another: kubelet follows it.
	if err := os.Rename(dir, filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, dir); err != nil {
		t.Fatal(err)
	}
	// The rename's event triggers a read; it may come before the link
	// exists (the watch then waits for the periodic read, as kubelet's).
	<-reads
	clk.Step(DefaultFileCheckFrequency)
	var adds, removes string
	for adds == "" || removes == "" {
		switch u := next(t, out); u.Op {
		case OpAdd:
			adds = podNames(u.Pods)
		case OpRemove:
			removes = podNames(u.Pods)
		}
	}
	if adds != "b-n" || removes != "a-n" {
		t.Errorf("after the swap: added %q removed %q", adds, removes)
	}
}

func TestFileSourcePeriodicRead(t *testing.T) {
	// The path does not exist at first: no watch, only the periodic read
	// sees it appear (and then sets up the watch).
	dir := filepath.Join(t.TempDir(), "manifests")
	clk := clocktesting.NewFakeClock(time.Now())
	reads := make(chan struct{}, 10)
	s, _ := NewFileSource(dir, "n", WithClock(clk), func(o *options) { o.listed = func() { reads <- struct{}{} } })
	out, _ := runSource(t, s.Run)
	if u := next(t, out); u.Op != OpAdd || len(u.Pods) != 0 {
		t.Fatalf("first read of a missing path: %v %d (want the empty ADD that marks the source seen)", u.Op, len(u.Pods))
	}
	<-reads
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx"))
	clk.Step(DefaultFileCheckFrequency)
	if u := next(t, out); u.Op != OpAdd || podNames(u.Pods) != "a-n" {
		t.Fatalf("periodic read: %v %s", u.Op, podNames(u.Pods))
	}
	<-reads
	// The watch is now set up: a new file is seen without a tick.
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "nginx"))
	if u := next(t, out); u.Op != OpAdd || podNames(u.Pods) != "b-n" {
		t.Fatalf("watched: %v %s", u.Op, podNames(u.Pods))
	}
}

func TestFileSourceHalfWrittenManifestKeptUntilPeriodicRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx"))
	clk := clocktesting.NewFakeClock(time.Now())
	reads := make(chan struct{}, 100)
	s, _ := NewFileSource(dir, "n", WithClock(clk), func(o *options) {
		o.listed = func() {
			select {
			case reads <- struct{}{}:
			default:
			}
		}
	})
	out, _ := runSource(t, s.Run)
	if u := next(t, out); podNames(u.Pods) != "a-n" {
		t.Fatalf("first %s", podNames(u.Pods))
	}
	<-reads
	// The manifest turns invalid: reads triggered by its events keep the
	// pod (kubelet's watch handler leaves its store alone on an error).
	write(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n")
	<-reads
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "nginx"))
	if u := next(t, out); u.Op != OpAdd || podNames(u.Pods) != "b-n" {
		t.Fatalf("after a turned invalid: %v %s (the pod of a must stay)", u.Op, podNames(u.Pods))
	}
	// The periodic read drops it, as kubelet's listConfig does.
	clk.Step(DefaultFileCheckFrequency)
	if u := next(t, out); u.Op != OpRemove || podNames(u.Pods) != "a-n" {
		t.Fatalf("periodic read: %v %s", u.Op, podNames(u.Pods))
	}
}
