package pullrecords

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/statefile"
)

// returns runs f and fails the test if ctx's deadline passes first (a
// read that waits, as the open of a FIFO with no writer did), instead of
// the whole test binary timing out. No sleep: only the deadline decides.
func returns(t *testing.T, ctx context.Context, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("did not return before the deadline: a read waited")
	}
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mkfifo(t *testing.T, dir, sub, key string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, sub, fileName(key)), 0o600); err != nil {
		t.Fatal(err)
	}
}

const intentV1 = `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"repo.repo/test/test:v1"}`

var listerV1 = listerFunc(func() []*runtimeapi.Image {
	return []*runtimeapi.Image{{Id: "testimageref", RepoTags: []string{"repo.repo/test/test:v1"}}}
})

// A FIFO named like a record (no writer) is skipped with an error, as a
// corrupt record, rather than waited on: New returns and uses the other
// records, and a lookup of it means verification.
func TestFIFORecordIsSkipped(t *testing.T) {
	ctx := deadline(t)
	dir := t.TempDir()
	mkfifo(t, dir, pullingDir, "repo.repo/test/fifo:v1")
	mkfifo(t, dir, pulledDir, "fiforef")
	writeFixture(t, dir, pullingDir, "repo.repo/test/test:v1", intentV1)
	var (
		m   *Manager
		err error
	)
	returns(t, ctx, func() { m, err = New(ctx, Config{Dir: dir}, listerV1) })
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := m.Record("testimageref"); err != nil || !ok || rec == nil {
		t.Errorf("the intent beside the FIFO did not become a record: %v %v %v", rec, ok, err)
	}
	returns(t, ctx, func() { _, err = m.store.listIntents(ctx) })
	if !errors.Is(err, statefile.ErrNotRegular) || !errors.Is(err, ErrDecode) {
		t.Errorf("listing intents = %v, want the FIFO reported as a corrupt record", err)
	}
	var ok bool
	returns(t, ctx, func() { _, ok, err = m.Record("fiforef") })
	if !errors.Is(err, statefile.ErrNotRegular) || !ok {
		t.Errorf("Record(FIFO) = %v %v, want it to exist as a corrupt record", ok, err)
	}
	var must bool
	returns(t, ctx, func() { must, err = m.MustAttemptImagePull(ctx, "docker.io/testing/test:latest", "fiforef", nil) })
	if !must || err != nil {
		t.Errorf("MustAttemptImagePull over a FIFO record = %v %v, want true", must, err)
	}
}

// New stops reading when ctx ends and says so.
func TestNewHonoursContext(t *testing.T) {
	dir := t.TempDir()
	writeFixture(t, dir, pullingDir, "repo.repo/test/test:v1", intentV1)
	writeFixture(t, dir, pulledDir, "testimageref-sa", recSA)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := New(ctx, Config{Dir: dir}, listerV1)
	if !errors.Is(err, context.Canceled) || m != nil {
		t.Fatalf("New with an ended ctx = %v, %v; want context.Canceled", m, err)
	}
	// Nothing was read, so nothing was migrated or turned into a record.
	if b, _ := os.ReadFile(filepath.Join(dir, pulledDir, fileName("testimageref-sa"))); string(b) != recSA {
		t.Errorf("a record was rewritten after ctx ended: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, pulledDir, fileName("testimageref"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an intent became a record after ctx ended: %v", err)
	}
	if _, err := (dirFiles{dir}).list(ctx, pulledDir); !errors.Is(err, context.Canceled) {
		t.Errorf("list with an ended ctx = %v, want context.Canceled", err)
	}
}

// sparse makes a file of size bytes that costs nothing to write.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// A record over its cap is refused from its size, unread, as a corrupt
// record: listed with an error, and for a lookup an error (the pod
// verifies); the next pull replaces it.
func TestOversizedRecordIsRefused(t *testing.T) {
	ctx := deadline(t)
	dir := t.TempDir()
	sparse(t, filepath.Join(dir, pulledDir, fileName("testimageref")), 64<<20)
	sparse(t, filepath.Join(dir, pullingDir, fileName("repo.repo/test/big:v1")), maxIntentSize+1)
	m, err := New(ctx, Config{Dir: dir}, listerV1)
	if err != nil {
		t.Fatal(err)
	}
	_, ok, err := m.Record("testimageref")
	if !errors.Is(err, statefile.ErrTooLarge) || !errors.Is(err, ErrDecode) || !ok {
		t.Errorf("Record(64 MiB) = %v %v, want a corrupt record over the cap", ok, err)
	}
	if _, err := m.store.listPulled(ctx); !errors.Is(err, statefile.ErrTooLarge) {
		t.Errorf("listPulled = %v, want ErrTooLarge", err)
	}
	if _, err := m.store.listIntents(ctx); !errors.Is(err, statefile.ErrTooLarge) {
		t.Errorf("listIntents = %v, want ErrTooLarge for an intent of %d bytes", err, maxIntentSize+1)
	}
	if ok, err := m.store.intentExists("repo.repo/test/big:v1"); ok || !errors.Is(err, statefile.ErrTooLarge) {
		t.Errorf("intentExists(oversized) = %v %v, want ErrTooLarge", ok, err)
	}
	if must, err := m.MustAttemptImagePull(ctx, "docker.io/testing/test:latest", "testimageref", nil); !must || err != nil {
		t.Errorf("MustAttemptImagePull over an oversized record = %v %v, want true", must, err)
	}
	// A pull writes a record in its place, as over a corrupt one.
	if err := m.RecordImagePulled(ctx, "docker.io/testing/test:latest", "testimageref", &Credentials{NodePodsAccessible: true}); err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := m.Record("testimageref"); err != nil || !ok || !rec.CredentialMapping["docker.io/testing/test"].NodePodsAccessible {
		t.Errorf("record after a pull = %+v %v %v", rec, ok, err)
	}
}

// A symlink in a record's place is not followed, even to a valid record:
// a record grants access to an image, so it must be the file written here.
func TestSymlinkRecordIsNotFollowed(t *testing.T) {
	ctx := deadline(t)
	dir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "anon")
	if err := os.WriteFile(elsewhere, []byte(recAnon), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, pulledDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, pulledDir, fileName("testimage-anonpull"))); err != nil {
		t.Fatal(err)
	}
	m, err := New(ctx, Config{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Record("testimage-anonpull"); !errors.Is(err, statefile.ErrNotRegular) {
		t.Errorf("Record(symlink) = %v, want ErrNotRegular", err)
	}
	if recs, err := m.store.listPulled(ctx); len(recs) != 0 || !errors.Is(err, statefile.ErrNotRegular) {
		t.Errorf("listPulled = %d records, %v; want none and ErrNotRegular", len(recs), err)
	}
	if must, _ := m.MustAttemptImagePull(ctx, "docker.io/testing/test:latest", "testimage-anonpull", nil); !must {
		t.Error("a symlinked record granted node-wide access to an image")
	}
}
