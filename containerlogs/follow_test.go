package containerlogs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/runtime"
)

// statusReader is a runtime whose one container runs until stopped.
type statusReader struct {
	stopped atomic.Bool
	err     atomic.Pointer[error]
	calls   atomic.Int64
}

func (s *statusReader) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	s.calls.Add(1)
	if err := s.err.Load(); err != nil {
		return nil, *err
	}
	state := runtimeapi.ContainerState_CONTAINER_RUNNING
	if s.stopped.Load() {
		state = runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: state}}, nil
}

// syncBuffer is a bytes.Buffer safe for a reader and a writer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor waits until cond holds, for at most 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// inotifyInstances counts the process's inotify instances.
func inotifyInstances(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

func appendFile(t testing.TB, f *os.File, s string) {
	t.Helper()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func line(i int, stream, tag, s string) string {
	return fmt.Sprintf("2026-11-26T17:00:%02dZ %s %s %s\n", i, stream, tag, s)
}

type follow struct {
	out  syncBuffer
	err  error
	done chan struct{}
}

func startFollow(ctx context.Context, path string, opts containerlogs.LogOptions, rt containerlogs.ContainerStatusReader) *follow {
	f := &follow{done: make(chan struct{})}
	opts.Follow = true
	go func() {
		defer close(f.done)
		f.err = containerlogs.ReadLogs(ctx, path, "c1", opts, rt, &f.out, &f.out)
	}()
	return f
}

func (f *follow) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-f.done:
		return f.err
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end")
		return nil
	}
}

func openAppend(t testing.TB, p string) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFollow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := writeLog(t, line(0, "stdout", "F", "old")+line(1, "stdout", "F", "tail"))
	w := openAppend(t, p)
	rt := &statusReader{}
	f := startFollow(context.Background(), p, containerlogs.LogOptions{TailLines: ptr.To[int64](1), Timestamp: true}, rt)
	waitFor(t, "the tail", func() bool { return f.out.String() == "2026-11-26T17:00:01.000000000Z tail\n" })

	// An incomplete line is written once it is whole.
	appendFile(t, w, line(2, "stderr", "P", "a")+"2026-11-26T17:00:03Z stderr F b")
	waitFor(t, "the partial line", func() bool { return strings.HasSuffix(f.out.String(), "Z a") })
	time.Sleep(50 * time.Millisecond)
	appendFile(t, w, "c\n")
	want := "2026-11-26T17:00:01.000000000Z tail\n2026-11-26T17:00:02.000000000Z abc\n"
	waitFor(t, "the joined line", func() bool { return f.out.String() == want })

	// The follow ends once the container stopped and the file is read.
	appendFile(t, w, line(4, "stdout", "F", "last"))
	rt.stopped.Store(true)
	if err := f.wait(t); err != nil {
		t.Fatalf("follow = %v", err)
	}
	want += "2026-11-26T17:00:04.000000000Z last\n"
	if got := f.out.String(); got != want {
		t.Errorf("follow wrote %q, want %q", got, want)
	}
	if n := inotifyInstances(t); n != 0 {
		t.Errorf("%d inotify instances left", n)
	}
}

// TestFollowRotation rotates the live log as containerlogs' Manager and a
// runtime do: rename, writes to the renamed file until the runtime
// reopens, then the new live file.
func TestFollowRotation(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := writeLog(t, "")
	old := openAppend(t, p)
	rt := &statusReader{}
	f := startFollow(context.Background(), p, containerlogs.LogOptions{}, rt)
	appendFile(t, old, line(0, "stdout", "F", "one"))
	waitFor(t, "one", func() bool { return f.out.String() == "one\n" })

	if err := os.Rename(p, p+".20261126-170000"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, old, line(1, "stdout", "F", "two"))
	waitFor(t, "two", func() bool { return f.out.String() == "one\ntwo\n" })
	// Written to the old file just before the runtime opens the new one:
	// kubelet may lose this line, podstart reads the old file to its end.
	appendFile(t, old, line(2, "stdout", "F", "three"))
	live := openAppend(t, p)
	appendFile(t, live, line(3, "stdout", "F", "four"))
	waitFor(t, "four", func() bool { return f.out.String() == "one\ntwo\nthree\nfour\n" })

	// Twice more, with the rotated file removed.
	for i := 0; i < 2; i++ {
		rotated := fmt.Sprintf("%s.2026112%d", p, i)
		if err := os.Rename(p, rotated); err != nil {
			t.Fatal(err)
		}
		live = openAppend(t, p)
		if err := os.Remove(rotated); err != nil {
			t.Fatal(err)
		}
		appendFile(t, live, line(4+i, "stderr", "F", fmt.Sprint("rotated ", i)))
		waitFor(t, "the rotated line", func() bool { return strings.HasSuffix(f.out.String(), fmt.Sprintf("rotated %d\n", i)) })
	}
	if got, want := f.out.String(), "one\ntwo\nthree\nfour\nrotated 0\nrotated 1\n"; got != want {
		t.Errorf("follow wrote %q, want %q", got, want)
	}
	rt.stopped.Store(true)
	if err := f.wait(t); err != nil {
		t.Fatalf("follow = %v", err)
	}
}

func TestFollowCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := writeLog(t, line(0, "stdout", "F", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	f := startFollow(ctx, p, containerlogs.LogOptions{}, &statusReader{})
	waitFor(t, "x", func() bool { return f.out.String() == "x\n" })
	cancel()
	err := f.wait(t)
	if !errors.Is(err, containerlogs.ErrContextCancelled) || !errors.Is(err, context.Canceled) || err.Error() != "context cancelled" {
		t.Fatalf("follow = %v, want kubelet's context cancelled", err)
	}
	if n := inotifyInstances(t); n != 0 {
		t.Errorf("%d inotify instances left", n)
	}
}

func TestFollowRuntimeErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tests := []struct {
		name    string
		err     error
		wantErr error // nil: goes on following
	}{
		{name: "unavailable runtime: still running", err: status.Error(codes.Unavailable, "restarting")},
		{name: "classified unavailable", err: runtime.Classify(status.Error(codes.Unavailable, "restarting"))},
		{name: "not found ends", err: status.Error(codes.NotFound, "gone"), wantErr: runtime.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeLog(t, line(0, "stdout", "F", "x"))
			rt := &statusReader{}
			rt.err.Store(&tt.err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := startFollow(ctx, p, containerlogs.LogOptions{}, rt)
			waitFor(t, "a status call", func() bool { return rt.calls.Load() > 0 })
			if tt.wantErr == nil {
				w := openAppend(t, p)
				appendFile(t, w, line(1, "stdout", "F", "y"))
				waitFor(t, "y", func() bool { return f.out.String() == "x\ny\n" })
				cancel()
				if err := f.wait(t); !errors.Is(err, containerlogs.ErrContextCancelled) {
					t.Fatalf("follow = %v", err)
				}
				return
			}
			if err := f.wait(t); !errors.Is(runtime.Classify(err), tt.wantErr) {
				t.Fatalf("follow = %v, want %v", err, tt.wantErr)
			}
		})
	}
	t.Run("nil status", func(t *testing.T) {
		p := writeLog(t, "")
		err := containerlogs.ReadLogs(context.Background(), p, "c1", containerlogs.LogOptions{Follow: true}, nilStatus{}, &bytes.Buffer{}, nil)
		if !errors.Is(err, containerlogs.ErrContainerStatusNil) {
			t.Fatalf("follow = %v, want ErrContainerStatusNil", err)
		}
	})
}

type nilStatus struct{}

func (nilStatus) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{}, nil
}

// errWriter fails its first write.
type errWriter struct{}

var errClosed = errors.New("connection closed")

func (errWriter) Write([]byte) (int, error) { return 0, errClosed }

func TestFollowWriterError(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := writeLog(t, "")
	done := make(chan error, 1)
	go func() {
		done <- containerlogs.ReadLogs(context.Background(), p, "c1", containerlogs.LogOptions{Follow: true}, &statusReader{}, errWriter{}, errWriter{})
	}()
	time.Sleep(20 * time.Millisecond)
	appendFile(t, openAppend(t, p), line(0, "stdout", "F", "x"))
	select {
	case err := <-done:
		if !errors.Is(err, errClosed) {
			t.Fatalf("follow = %v, want the writer's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end")
	}
}

// TestFollowMany runs 1,000 follows of one file at once: they share one
// inotify instance, where kubelet's would need 1,000 (over the usual
// per-user limit of 128), and all end with their context.
func TestFollowMany(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 1000
	p := writeLog(t, line(0, "stdout", "F", "first"))
	rt := &statusReader{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follows := make([]*follow, n)
	for i := range follows {
		follows[i] = startFollow(ctx, p, containerlogs.LogOptions{}, rt)
	}
	for _, f := range follows {
		waitFor(t, "first", func() bool { return f.out.String() == "first\n" })
	}
	if got := inotifyInstances(t); got != 1 {
		t.Errorf("%d follows hold %d inotify instances, want 1", n, got)
	}
	appendFile(t, openAppend(t, p), line(1, "stdout", "F", "second"))
	for _, f := range follows {
		waitFor(t, "second", func() bool { return f.out.String() == "first\nsecond\n" })
	}
	cancel()
	for _, f := range follows {
		if err := f.wait(t); !errors.Is(err, context.Canceled) {
			t.Fatalf("follow = %v", err)
		}
	}
	if got := inotifyInstances(t); got != 0 {
		t.Errorf("%d inotify instances left", got)
	}
}
