package fake_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// The helper process learns the control socket and the IDs from these.
const (
	envControl   = "PODSTART_FAKE_CONTROL"
	envContainer = "PODSTART_FAKE_CONTROL_CONTAINER"
	envSandbox   = "PODSTART_FAKE_CONTROL_SANDBOX"
)

// TestControlFromAnotherProcess serves the fake on a CRI socket and a
// control socket; another process (this test binary run again, in
// TestControlHelperProcess) makes a container exit and its sandbox die;
// a CRI client sees both.
func TestControlFromAnotherProcess(t *testing.T) {
	if os.Getenv(envControl) != "" {
		t.Skip("in the helper process")
	}
	t.Parallel()
	f := fake.New(fake.WithImages("busybox:1.35"))
	c, _ := wiretest.Serve(t, f, runtime.WithCallTimeout(10*time.Second))
	// Socket paths are limited to 108 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "podstart-control-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "control.sock")
	stop, err := f.ServeControl(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "p"}}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.CreateContainer(ctx, sb, containerCfg("app"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	side, err := c.CreateContainer(ctx, sb, containerCfg("side"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{app, side} {
		if err := c.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestControlHelperProcess$", "-test.count=1")
	// The helper does not sleep a second on exit as a -race binary does.
	cmd.Env = append(os.Environ(), envControl+"="+path, envContainer+"="+app, envSandbox+"="+sb,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}

	st, err := c.ContainerStatus(ctx, app, false)
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.ExitCode != 137 || st.Status.Reason != "OOMKilled" {
		t.Fatalf("app after the helper: %v, %v", st.GetStatus(), err)
	}
	st, err = c.ContainerStatus(ctx, side, false)
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.ExitCode != 137 {
		t.Fatalf("side container after its sandbox died: %v, %v", st.GetStatus(), err)
	}
	sst, err := c.PodSandboxStatus(ctx, sb, false)
	if err != nil || sst.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandbox after the helper: %v, %v", sst.GetStatus(), err)
	}
}

// TestControlHelperProcess is the other process of
// TestControlFromAnotherProcess; run alone, it skips.
func TestControlHelperProcess(t *testing.T) {
	path := os.Getenv(envControl)
	if path == "" {
		t.Skip("run by TestControlFromAnotherProcess")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	app, sb := os.Getenv(envContainer), os.Getenv(envSandbox)
	if err := fake.ControlExitContainer(ctx, path, app, fake.Exit{Code: 137, Reason: "OOMKilled"}); err != nil {
		t.Fatal(err)
	}
	var ce *runtime.Error
	if err := fake.ControlExitContainer(ctx, path, app, fake.Exit{Code: 1}); !errors.As(err, &ce) || ce.Code != codes.FailedPrecondition {
		t.Errorf("exit of an exited container = %v; want FailedPrecondition", err)
	}
	if err := fake.ControlExitContainer(ctx, path, "absent", fake.Exit{}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("exit of an absent container = %v; want ErrNotFound", err)
	}
	if err := fake.ControlKillSandbox(ctx, path, "absent"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("kill of an absent sandbox = %v; want ErrNotFound", err)
	}
	if err := fake.ControlKillSandbox(ctx, path, sb); err != nil {
		t.Fatal(err)
	}
}

// TestControlBadRequest: a malformed exit code is refused, not read as 0.
func TestControlBadRequest(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox:1.35"))
	dir, err := os.MkdirTemp("", "podstart-control-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "control.sock")
	stop, err := f.ServeControl(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, _ := f.CreateContainer(ctx, sandbox(t, f, "p", false), containerCfg("app"), nil)
	f.StartContainer(ctx, id)
	// Through a raw HTTP request, as curl would send it.
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post("http://fake/containers/"+id+"/exit?code=x", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("code=x answered %s", resp.Status)
	}
	if st, _ := f.ContainerStatus(ctx, id, false); st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("a refused request changed the container: %v", st.Status.State)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
}
