package containerlogs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/containerlogs"
	"github.com/podstart/podstart/runtime"
)

var ts = t0.Format(containerlogs.TimestampFormat)

func TestRotateOnce(t *testing.T) {
	const long = "longer than 10 bytes"
	type ctr struct {
		name    string
		restart int
		running bool
	}
	tests := []struct {
		name       string
		maxFiles   int
		containers []ctr
		files      map[string]string // before, relative to the logs dir
		symlinks   map[string]string // name → target, before
		outside    map[string]string // files in a directory beside the logs dir
		reopenErr  error
		want       map[string]string // after
		wantErr    error
		anyErr     bool // an error of no sentinel (os.Root's escape)
		wantCalls  int  // ReopenContainerLog calls
	}{{
		name:       "under the maximum size: left",
		containers: []ctr{{"app", 0, true}},
		files:      map[string]string{podDir + "/app/0.log": "short"},
		want:       map[string]string{podDir + "/app/0.log": "short"},
	}, {
		name:       "at the maximum size: rotated, the runtime reopens",
		containers: []ctr{{"app", 0, true}},
		files:      map[string]string{podDir + "/app/0.log": "0123456789"},
		want:       map[string]string{podDir + "/app/0.log." + ts: "0123456789", podDir + "/app/0.log": ""},
		wantCalls:  1,
	}, {
		// kubelet's TestRotateLogs, one container per directory.
		name:     "kubelet's rotation: excess removed, older compressed, not running left",
		maxFiles: 3,
		containers: []ctr{
			{"not-need-rotate", 0, true}, {"need-rotate", 0, true},
			{"has-excess-log", 0, true}, {"not-running", 0, false},
		},
		files: map[string]string{
			podDir + "/not-need-rotate/0.log":                   "short",
			podDir + "/need-rotate/0.log":                       long,
			podDir + "/has-excess-log/0.log":                    long,
			podDir + "/not-running/0.log":                       long,
			podDir + "/has-excess-log/0.log.00000000-000001":    "the length doesn't matter",
			podDir + "/has-excess-log/0.log.00000000-000000.gz": "",
		},
		want: map[string]string{
			podDir + "/not-need-rotate/0.log":                   "short",
			podDir + "/need-rotate/0.log." + ts:                 long,
			podDir + "/need-rotate/0.log":                       "",
			podDir + "/has-excess-log/0.log.00000000-000001.gz": "the length doesn't matter",
			podDir + "/has-excess-log/0.log." + ts:              long,
			podDir + "/has-excess-log/0.log":                    "",
			podDir + "/not-running/0.log":                       long,
		},
		wantCalls: 2,
	}, {
		name:       "the previous restart's log survives for kubectl logs --previous",
		containers: []ctr{{"app", 0, false}, {"app", 1, true}},
		files:      map[string]string{podDir + "/app/0.log": long, podDir + "/app/1.log": long},
		want: map[string]string{
			podDir + "/app/0.log": long, podDir + "/app/1.log." + ts: long, podDir + "/app/1.log": "",
		},
		wantCalls: 1,
	}, {
		name:       "stale temporary files and superseded rotated files removed",
		containers: []ctr{{"app", 0, true}},
		files: map[string]string{
			podDir + "/app/0.log":                        long,
			podDir + "/app/0.log.20260101-000000":        "superseded",
			podDir + "/app/0.log.20260101-000000.gz":     "",
			podDir + "/app/0.log.20260101-000001.tmp":    "partial",
			podDir + "/app/0.log.20260102-000000":        "older",
			podDir + "/app/0.log.20260102-000000.gz.tmp": "partial",
		},
		want: map[string]string{
			podDir + "/app/0.log.20260101-000000.gz": "",
			podDir + "/app/0.log.20260102-000000.gz": "older",
			podDir + "/app/0.log." + ts:              long,
			podDir + "/app/0.log":                    "",
		},
		wantCalls: 1,
	}, {
		name:       "MaxFiles 2: every older file goes",
		maxFiles:   2,
		containers: []ctr{{"app", 0, true}},
		files: map[string]string{
			podDir + "/app/0.log": long, podDir + "/app/0.log.20260101-000000": "a", podDir + "/app/0.log.20260102-000000.gz": "b",
		},
		want:      map[string]string{podDir + "/app/0.log." + ts: long, podDir + "/app/0.log": ""},
		wantCalls: 1,
	}, {
		name:       "reopen fails: the live log is renamed back",
		containers: []ctr{{"app", 0, true}},
		files:      map[string]string{podDir + "/app/0.log": long, podDir + "/app/0.log.20260101-000000": "older"},
		reopenErr:  errors.New("random error"),
		want:       map[string]string{podDir + "/app/0.log": long, podDir + "/app/0.log.20260101-000000.gz": "older"},
		wantErr:    containerlogs.ErrReopen,
		wantCalls:  1,
	}, {
		name:       "missing live log: the runtime reopens it",
		containers: []ctr{{"app", 0, true}},
		want:       map[string]string{podDir + "/app/0.log": ""},
		wantCalls:  1,
	}, {
		name:       "rotated this second already: waits for the next",
		containers: []ctr{{"app", 0, true}},
		files:      map[string]string{podDir + "/app/0.log": long, podDir + "/app/0.log." + ts + ".gz": "x"},
		want:       map[string]string{podDir + "/app/0.log": long, podDir + "/app/0.log." + ts + ".gz": "x"},
	}, {
		name:       "a live log that is a symlink is not followed",
		containers: []ctr{{"app", 0, true}},
		outside:    map[string]string{"secret": long},
		symlinks:   map[string]string{podDir + "/app/0.log": "../../../outside/secret"},
		want:       map[string]string{podDir + "/app/0.log": "-> ../../../outside/secret"},
		wantErr:    containerlogs.ErrNotRegular,
	}, {
		name:       "a container's log directory that is a symlink out of the logs dir is not followed",
		containers: []ctr{{"app", 0, true}},
		outside:    map[string]string{"0.log": long},
		symlinks:   map[string]string{podDir + "/app": "../../outside"},
		want:       map[string]string{podDir + "/app": "-> ../../outside"},
		anyErr:     true,
	}, {
		name:       "rotated files that are symlinks are neither compressed nor removed",
		maxFiles:   2,
		containers: []ctr{{"app", 0, true}},
		files:      map[string]string{podDir + "/app/0.log": long},
		outside:    map[string]string{"secret": long},
		symlinks:   map[string]string{podDir + "/app/0.log.20260101-000000": "../../../outside/secret"},
		want: map[string]string{
			podDir + "/app/0.log." + ts: long, podDir + "/app/0.log": "",
			podDir + "/app/0.log.20260101-000000": "-> ../../../outside/secret",
		},
		wantCalls: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			n := newNode(t)
			logs := n.dir
			outside := filepath.Join(filepath.Dir(logs), "outside")
			for _, c := range tt.containers {
				n.container(c.name, c.restart, c.running)
			}
			n.files(tt.files)
			for name, content := range tt.outside {
				if err := os.MkdirAll(outside, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for name, target := range tt.symlinks {
				if err := os.RemoveAll(filepath.Join(logs, name)); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(logs, name)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.reopenErr != nil {
				n.rt.Fail("ReopenContainerLog", tt.reopenErr)
			}
			maxFiles := tt.maxFiles
			if maxFiles == 0 {
				maxFiles = 5
			}
			m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(logs), containerlogs.WithMaxSize(10),
				containerlogs.WithMaxFiles(maxFiles), containerlogs.WithClock(n.clock), containerlogs.WithWorkers(3))
			if err != nil {
				t.Fatal(err)
			}
			err = m.RotateOnce(ctx)
			if tt.anyErr && err == nil || !tt.anyErr && (tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("RotateOnce: %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, tree(t, logs)); diff != "" {
				t.Errorf("logs dir (-want +got):\n%s", diff)
			}
			for name, content := range tt.outside {
				if got := readLog(t, filepath.Join(outside, name)); got != content {
					t.Errorf("outside file %s changed: %q", name, got)
				}
			}
			if got := n.rt.CallCount("ReopenContainerLog"); got != tt.wantCalls {
				t.Errorf("ReopenContainerLog calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

// The compressed file keeps the rotated file's mode (kubelet's
// TestCompressLog).
func TestCompressKeepsMode(t *testing.T) {
	n := newNode(t)
	n.container("app", 0, true)
	n.files(map[string]string{podDir + "/app/0.log": "0123456789", podDir + "/app/0.log.20260101-000000": "older"})
	old := filepath.Join(n.dir, podDir, "app/0.log.20260101-000000")
	if err := os.Chmod(old, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(10), containerlogs.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(old + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("compressed mode %v, want 0600", info.Mode().Perm())
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("uncompressed file still there: %v", err)
	}
}

func TestLogPathOutsideLogsDir(t *testing.T) {
	n := newNode(t)
	elsewhere := t.TempDir()
	sb := n.rt.SeedSandbox(&runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "other", Namespace: "ns", Uid: "uid-2"},
		LogDirectory: elsewhere,
	}, runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	n.containerIn(sb, "app", 0, true)
	live := filepath.Join(elsewhere, "app/0.log")
	if err := os.WriteFile(live, []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(10), containerlogs.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RotateOnce(context.Background()); !errors.Is(err, containerlogs.ErrOutsideLogsDir) {
		t.Errorf("RotateOnce: %v, want ErrOutsideLogsDir", err)
	}
	if diff := cmp.Diff(map[string]string{"app/0.log": "0123456789abcdef"}, tree(t, elsewhere)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A container that is gone between the list and its status is skipped;
// an unavailable runtime is reported with its class.
func TestRuntimeErrors(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.container("app", 0, true)
	n.files(map[string]string{podDir + "/app/0.log": "0123456789"})
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(10), containerlogs.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	n.rt.FailNext("ContainerStatus", 1, errNotFound)
	if err := m.RotateOnce(ctx); err != nil {
		t.Errorf("container gone: %v", err)
	}
	n.rt.FailNext("ListContainers", 1, errUnavailable)
	if err := m.RotateOnce(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("runtime unavailable: %v", err)
	}
	n.rt.FailNext("ReopenContainerLog", 1, errUnavailable)
	if err := m.RotateOnce(ctx); !errors.Is(err, containerlogs.ErrReopen) || !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("reopen unavailable: %v", err)
	}
	if err := m.RotateOnce(ctx); err != nil {
		t.Errorf("next pass: %v", err)
	}
	want := map[string]string{podDir + "/app/0.log." + ts: "0123456789", podDir + "/app/0.log": ""}
	if diff := cmp.Diff(want, tree(t, n.dir)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// kubelet's TestClean: the removed container's files go, the others stay.
func TestClean(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.container("one", 0, true)
	n.container("two", 0, true)
	three := n.container("three", 0, false)
	n.container("three", 1, true)
	n.files(map[string]string{
		podDir + "/one/0.log":                      "",
		podDir + "/two/0.log":                      "",
		podDir + "/two/0.log.00000000-000000.gz":   "",
		podDir + "/two/0.log.00000000-000001":      "",
		podDir + "/three/0.log":                    "",
		podDir + "/three/0.log.00000000-000000.gz": "",
		podDir + "/three/0.log.00000000-000001":    "",
		podDir + "/three/1.log":                    "",
		podDir + "/three/10.log":                   "",
	})
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Clean(ctx, three); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		podDir + "/one/0.log":                    "",
		podDir + "/two/0.log":                    "",
		podDir + "/two/0.log.00000000-000000.gz": "",
		podDir + "/two/0.log.00000000-000001":    "",
		podDir + "/three/1.log":                  "",
		podDir + "/three/10.log":                 "",
	}
	if diff := cmp.Diff(want, tree(t, n.dir)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := m.Clean(ctx, "no-such-container"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Clean of an unknown container: %v", err)
	}
	if err := m.CleanLog("/etc/passwd"); !errors.Is(err, containerlogs.ErrOutsideLogsDir) {
		t.Errorf("CleanLog outside: %v", err)
	}
}

// kubelet's TestGetAllLogs.
func TestAllLogs(t *testing.T) {
	n := newNode(t)
	names := []string{
		"0.log.11111111-111111.gz", "0.log", "0.log.00000000-000000.gz", "0.log.19900322-000000.gz",
		"0.log.19900322-111111.gz", "0.log.19880620-000000", "0.log.19880620-000000.gz",
		"0.log.19880620-111111.gz", "0.log.20180101-000000", "0.log.20180101-000000.tmp", "1.log",
	}
	files := map[string]string{}
	for _, name := range names {
		files[podDir+"/app/"+name] = ""
	}
	n.files(files)
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.AllLogs(filepath.Join(n.dir, podDir, "app/0.log"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range []string{
		"0.log.00000000-000000.gz", "0.log.11111111-111111.gz", "0.log.19880620-000000.gz", "0.log.19880620-111111.gz",
		"0.log.19900322-000000.gz", "0.log.19900322-111111.gz", "0.log.20180101-000000", "0.log",
	} {
		want = append(want, filepath.Join(n.dir, podDir, "app", name))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNewRefuses(t *testing.T) {
	n := newNode(t)
	for _, tt := range []struct {
		name string
		opt  containerlogs.Option
	}{
		{"MaxFiles 1", containerlogs.WithMaxFiles(1)},
		{"no workers", containerlogs.WithWorkers(0)},
		{"no interval", containerlogs.WithMonitorInterval(0)},
		{"no logs dir", containerlogs.WithPodLogsDir("")},
	} {
		if _, err := containerlogs.New(n.rt, tt.opt); !errors.Is(err, containerlogs.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", tt.name, err)
		}
	}
}

// A negative maximum size turns rotation off, as kubelet's.
func TestRotationOff(t *testing.T) {
	n := newNode(t)
	n.container("app", 0, true)
	n.files(map[string]string{podDir + "/app/0.log": "0123456789"})
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RotateOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.rt.CallCount("ListContainers") != 0 {
		t.Error("rotation off still lists containers")
	}
}

// If the live name cannot be given back after a failed reopen, the error
// says where the log's content is, and that file is kept.
func TestRestoreFails(t *testing.T) {
	n := newNode(t)
	n.container("app", 0, true)
	n.files(map[string]string{podDir + "/app/0.log": "0123456789"})
	live := filepath.Join(n.dir, podDir, "app/0.log")
	n.rt.Intercept(func(_ context.Context, method string, _ proto.Message) error {
		if method != "ReopenContainerLog" {
			return nil
		}
		// Something takes the live name before the rename back.
		if err := os.MkdirAll(filepath.Join(live, "in-the-way"), 0o755); err != nil {
			t.Error(err)
		}
		return errUnavailable
	})
	m, err := containerlogs.New(n.rt, containerlogs.WithPodLogsDir(n.dir), containerlogs.WithMaxSize(10), containerlogs.WithClock(n.clock))
	if err != nil {
		t.Fatal(err)
	}
	err = m.RotateOnce(context.Background())
	for _, want := range []error{containerlogs.ErrReopen, containerlogs.ErrRestore, runtime.ErrUnavailable} {
		if !errors.Is(err, want) {
			t.Errorf("RotateOnce: %v, want it to match %v", err, want)
		}
	}
	if got := readLog(t, live+"."+ts); got != "0123456789" {
		t.Errorf("rotated file holds %q", got)
	}
}
