package containerlogs_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime/fake"
)

var (
	errNotFound    = status.Error(codes.NotFound, "container not found")
	errUnavailable = status.Error(codes.Unavailable, "runtime restarting")
)

// podDir is the pod's log directory under the logs dir, podsync's layout.
const podDir = "ns_web_uid-1"

// t0 is the fake clock's start: rotated files are named after it.
var t0 = time.Date(2026, 11, 26, 17, 0, 0, 0, time.Local)

// node is a fake runtime with one pod, its log directory in a temporary
// directory, and a fake clock. Like a real runtime it (re)creates a
// container's live log when it reopens it, and a writer can write to the
// file the runtime holds open.
type node struct {
	t       testing.TB
	rt      *fake.Runtime
	dir     string // the pod logs dir, <temp>/logs
	sandbox string
	clock   *testingclock.FakeClock

	mu    sync.Mutex
	paths map[string]string   // container ID → log path
	open  map[string]*os.File // the runtime's handle on each running container's log
}

func newNode(t testing.TB) *node {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, rt: fake.New(), dir: dir, clock: testingclock.NewFakeClock(t0),
		paths: map[string]string{}, open: map[string]*os.File{}}
	n.sandbox = n.rt.SeedSandbox(&runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "uid-1"},
		LogDirectory: filepath.Join(dir, podDir),
	}, runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	n.rt.InterceptAnswer(func(_ context.Context, method string, req, resp proto.Message, err error) (proto.Message, error) {
		if method != "ReopenContainerLog" || err != nil {
			return resp, err
		}
		n.reopen(req.(*runtimeapi.ReopenContainerLogRequest).GetContainerId())
		return resp, err
	})
	t.Cleanup(func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, f := range n.open {
			f.Close()
		}
	})
	return n
}

// reopen is what the runtime does on ReopenContainerLog: close its file
// and open the path afresh.
func (n *node) reopen(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if f := n.open[id]; f != nil {
		f.Close()
	}
	f, err := os.OpenFile(n.paths[id], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		n.t.Errorf("runtime reopen: %v", err)
		return
	}
	n.open[id] = f
}

// container seeds a container instance of the pod.
func (n *node) container(name string, restart int, running bool) string {
	return n.containerIn(n.sandbox, name, restart, running)
}

// containerIn seeds a container instance in another sandbox.
func (n *node) containerIn(sandbox, name string, restart int, running bool) string {
	n.t.Helper()
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if running {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	id, err := n.rt.SeedContainer(sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restart)},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		LogPath:  filepath.Join(name, strconv.Itoa(restart)+".log"),
	}, fake.Seeded{State: state})
	if err != nil {
		n.t.Fatal(err)
	}
	st, err := n.rt.ContainerStatus(context.Background(), id, false)
	if err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	n.paths[id] = st.GetStatus().GetLogPath()
	n.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(st.GetStatus().GetLogPath()), 0o755); err != nil {
		n.t.Fatal(err)
	}
	return id
}

// write appends data to the file the runtime holds for the container,
// opening it first if the runtime has not yet.
func (n *node) write(id string, data []byte) {
	n.mu.Lock()
	f := n.open[id]
	n.mu.Unlock()
	if f == nil {
		n.reopen(id)
		n.mu.Lock()
		f = n.open[id]
		n.mu.Unlock()
	}
	if _, err := f.Write(data); err != nil {
		n.t.Fatal(err)
	}
}

// files writes files (paths relative to the logs dir) with their content,
// gzipped for a .gz file.
func (n *node) files(files map[string]string) {
	n.t.Helper()
	for name, content := range files {
		p := filepath.Join(n.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			n.t.Fatal(err)
		}
		data := []byte(content)
		if strings.HasSuffix(name, ".gz") {
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			z.Write(data)
			z.Close()
			data = b.Bytes()
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			n.t.Fatal(err)
		}
	}
}

// tree is every file under dir by its relative path, with its content
// (gunzipped for a .gz file); a symlink reads as "-> target".
func tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		}
		out[rel] = readLog(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readLog is a log file's content, gunzipped when it is compressed.
func readLog(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		r = z
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return string(b)
}
