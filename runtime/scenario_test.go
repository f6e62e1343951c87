package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// transports run a scenario against the fake itself and against the fake
// served on a unix socket through runtime.Dial.
var transports = []struct {
	name string
	dial func(t *testing.T, f *fake.Runtime) runtime.Runtime
}{
	{"in-process", func(_ *testing.T, f *fake.Runtime) runtime.Runtime { return f }},
	{"unix-socket", func(t *testing.T, f *fake.Runtime) runtime.Runtime {
		c, _ := wiretest.Serve(t, f, runtime.WithCallTimeout(5*time.Second))
		return c
	}},
}

func sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Labels:   map[string]string{"io.kubernetes.pod.name": name},
	}
}

func containerConfig(name, image string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Labels:   map[string]string{"io.kubernetes.container.name": name},
	}
}

func TestScenarios(t *testing.T) {
	scenarios := []struct {
		name string
		opts []fake.Option
		run  func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime)
	}{
		{"pull then image status", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime) {
			ref, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.35"}, nil, nil)
			if err != nil || ref == "" {
				t.Fatalf("PullImage = %q, %v", ref, err)
			}
			st, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.35"}, false)
			if err != nil || st.GetImage().GetId() != ref {
				t.Fatalf("ImageStatus = %v, %v; want id %s", st, err, ref)
			}
			if got := st.Image.RepoTags; len(got) != 1 || got[0] != "docker.io/library/busybox:1.35" {
				t.Errorf("RepoTags = %v", got)
			}
		}},
		{"absent image is nil, not an error", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			st, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, false)
			if err != nil || st.GetImage() != nil {
				t.Fatalf("ImageStatus = %v, %v", st, err)
			}
		}},
		{"list and remove images", []fake.Option{fake.WithImages("a:1", "b:2")}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			if imgs, err := rt.ListImages(ctx, nil); err != nil || len(imgs) != 2 {
				t.Fatalf("ListImages = %d, %v", len(imgs), err)
			}
			for i := 0; i < 2; i++ { // removing twice succeeds, as in containerd
				if err := rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "a:1"}); err != nil {
					t.Fatal(err)
				}
			}
			if imgs, _ := rt.ListImages(ctx, nil); len(imgs) != 1 {
				t.Fatalf("after remove: %d images", len(imgs))
			}
		}},
		{"registry 401 is ErrUnauthorized", []fake.Option{fake.WithRegistryAuth("127.0.0.1:5000", "u", "p")}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			img := &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/busybox:1.35"}
			for _, auth := range []*runtimeapi.AuthConfig{nil, {Username: "u", Password: "wrong"}} {
				if _, err := rt.PullImage(ctx, img, auth, nil); !errors.Is(err, runtime.ErrUnauthorized) {
					t.Fatalf("PullImage(%v) = %v, want ErrUnauthorized", auth, err)
				}
			}
			if _, err := rt.PullImage(ctx, img, &runtimeapi.AuthConfig{Auth: "dTpw"}, nil); err != nil {
				t.Fatalf("PullImage with base64 auth: %v", err)
			}
		}},
		{"unknown image is ErrNotFound", []fake.Option{fake.WithRegistryImages("busybox")}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			if _, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("PullImage = %v", err)
			}
		}},
		{"container lifecycle created running exited", []fake.Option{fake.WithImages("busybox")}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime) {
			sb, err := rt.RunPodSandbox(ctx, sandboxConfig("p"), "")
			if err != nil {
				t.Fatal(err)
			}
			id, err := rt.CreateContainer(ctx, sb, containerConfig("c", "busybox"), sandboxConfig("p"))
			if err != nil {
				t.Fatal(err)
			}
			wantState := func(state runtimeapi.ContainerState, code int32) {
				t.Helper()
				st, err := rt.ContainerStatus(ctx, id, false)
				if err != nil || st.Status.State != state || st.Status.ExitCode != code {
					t.Fatalf("status = %v, %v; want %v exit %d", st.GetStatus(), err, state, code)
				}
			}
			wantState(runtimeapi.ContainerState_CONTAINER_CREATED, 0)
			if err := rt.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			wantState(runtimeapi.ContainerState_CONTAINER_RUNNING, 0)
			if err := f.ExitContainer(id, fake.Exit{Code: 3}); err != nil {
				t.Fatal(err)
			}
			wantState(runtimeapi.ContainerState_CONTAINER_EXITED, 3)
			if st, _ := rt.ContainerStatus(ctx, id, false); st.Status.Reason != "Error" {
				t.Errorf("reason = %q", st.Status.Reason)
			}
			if err := rt.StartContainer(ctx, id); err == nil {
				t.Fatal("restarting an exited container succeeded")
			}
		}},
		{"create needs a present image", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			sb, _ := rt.RunPodSandbox(ctx, sandboxConfig("p"), "")
			if _, err := rt.CreateContainer(ctx, sb, containerConfig("c", "nginx"), nil); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("CreateContainer = %v, want ErrNotFound", err)
			}
		}},
		{"unknown container is ErrNotFound", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			if _, err := rt.ContainerStatus(ctx, "nope", false); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("ContainerStatus = %v", err)
			}
		}},
		{"sandbox list filters and removal", []fake.Option{fake.WithImages("busybox")}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			a, _ := rt.RunPodSandbox(ctx, sandboxConfig("a"), "")
			b, _ := rt.RunPodSandbox(ctx, sandboxConfig("b"), "")
			cid, _ := rt.CreateContainer(ctx, a, containerConfig("c", "busybox"), nil)
			got, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": "b"}})
			if err != nil || len(got) != 1 || got[0].Id != b {
				t.Fatalf("ListPodSandbox = %v, %v", got, err)
			}
			if err := rt.RemovePodSandbox(ctx, a); err == nil {
				t.Fatal("removed a ready sandbox")
			}
			if err := rt.StopPodSandbox(ctx, a); err != nil {
				t.Fatal(err)
			}
			st, _ := rt.PodSandboxStatus(ctx, a, false)
			if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Fatalf("state = %v", st.Status.State)
			}
			if err := rt.RemovePodSandbox(ctx, a); err != nil {
				t.Fatal(err)
			}
			if cs, _ := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: cid}); len(cs) != 0 {
				t.Fatalf("container outlived its sandbox: %v", cs)
			}
		}},
		{"exec exit code", []fake.Option{fake.WithImages("busybox"), fake.WithExecFunc(func(_ string, cmd []string) ([]byte, []byte, int32, error) {
			return []byte("out"), []byte("bad"), 2, nil
		})}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, _ *fake.Runtime) {
			sb, _ := rt.RunPodSandbox(ctx, sandboxConfig("p"), "")
			id, _ := rt.CreateContainer(ctx, sb, containerConfig("c", "busybox"), nil)
			if err := rt.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			stdout, _, err := rt.ExecSync(ctx, id, []string{"false"}, time.Second)
			var exit *runtime.ExitError
			if !errors.As(err, &exit) || exit.ExitCode != 2 || string(stdout) != "out" || string(exit.Stderr) != "bad" {
				t.Fatalf("ExecSync = %q, %v", stdout, err)
			}
		}},
		{"scripted Unavailable", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime) {
			f.FailNext("Version", 1, status.Error(codes.Unavailable, "runtime restarting"))
			if _, err := rt.Version(ctx, "v1"); !errors.Is(err, runtime.ErrUnavailable) {
				t.Fatalf("Version = %v, want ErrUnavailable", err)
			}
			if _, err := rt.Version(ctx, "v1"); err != nil {
				t.Fatalf("second Version = %v, want success", err)
			}
		}},
		{"hang until the context deadline", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime) {
			entered, release := f.Hang("ContainerStatus")
			defer release()
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := rt.ContainerStatus(cctx, "x", false)
			if !errors.Is(err, runtime.ErrDeadlineExceeded) {
				t.Fatalf("ContainerStatus = %v, want ErrDeadlineExceeded", err)
			}
			<-entered
		}},
		{"cancelled context", nil, func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := rt.Status(cctx, false); !errors.Is(err, runtime.ErrCanceled) {
				t.Fatalf("Status = %v, want ErrCanceled", err)
			}
		}},
		{"calls are recorded in order", []fake.Option{fake.WithImages("busybox")}, func(t *testing.T, ctx context.Context, rt runtime.Runtime, f *fake.Runtime) {
			f.ResetCalls()
			sb, _ := rt.RunPodSandbox(ctx, sandboxConfig("p"), "runc")
			rt.CreateContainer(ctx, sb, containerConfig("c", "busybox"), nil)
			calls := f.Calls()
			if len(calls) != 2 || calls[0].Method != "RunPodSandbox" || calls[1].Method != "CreateContainer" {
				t.Fatalf("calls = %v", calls)
			}
			if req := calls[0].Request.(*runtimeapi.RunPodSandboxRequest); req.RuntimeHandler != "runc" || req.Config.Metadata.Name != "p" {
				t.Fatalf("recorded request = %v", req)
			}
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					f := fake.New(sc.opts...)
					rt := tr.dial(t, f)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					sc.run(t, ctx, rt, f)
				})
			}
		})
	}
}

// TestServerGoesAwayMidCall stops the server while a call is in flight: the
// client must return a classified error promptly, and no goroutine may leak
// (TestMain checks).
func TestServerGoesAwayMidCall(t *testing.T) {
	f := fake.New()
	entered, release := f.Hang("PullImage")
	defer release()
	dir, err := os.MkdirTemp("", "podstart-gone-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := fake.NewServer(f)
	endpoint, err := srv.ServeUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
		errc <- err
	}()
	<-entered
	srv.Stop()
	if err := <-errc; !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("PullImage after server stop = %v, want ErrUnavailable", err)
	}
	// Later calls fail fast too, with the same class.
	if _, err := c.Version(ctx, "v1"); !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("Version after server stop = %v, want ErrUnavailable", err)
	}
}

func TestDialNoRuntime(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	_, err := runtime.Dial(ctx, filepath.Join(dir, "absent.sock"), runtime.WithConnectTimeout(200*time.Millisecond))
	if !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("Dial(absent) = %v, want ErrUnavailable", err)
	}
	if _, err := runtime.Dial(ctx, "tcp://127.0.0.1:1"); !errors.Is(err, runtime.ErrUnsupportedEndpoint) {
		t.Fatalf("Dial(tcp) = %v, want ErrUnsupportedEndpoint", err)
	}
}

func TestUnimplementedOverTheWire(t *testing.T) {
	// A server for a runtime that only implements part of CRI answers
	// Unimplemented for the rest; the client classifies it.
	c, _ := wiretest.Serve(t, fake.New())
	ctx := context.Background()
	conn := runtimeapi.NewRuntimeServiceClient(c.Conn())
	_, err := conn.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if !errors.Is(runtime.Classify(err), runtime.ErrUnimplemented) {
		t.Fatalf("RuntimeConfig = %v", err)
	}
}

func TestMaxMsgSize(t *testing.T) {
	f := fake.New()
	for i := 0; i < 200; i++ {
		fake.WithImages("example.com/image" + string(rune('a'+i%26)) + ":" + time.Duration(i).String())(f)
	}
	c, _ := wiretest.Serve(t, f, runtime.WithMaxMsgSize(1024))
	if _, err := c.ListImages(context.Background(), nil); err == nil {
		t.Fatal("ListImages larger than the message limit succeeded")
	}
	big, _ := wiretest.Serve(t, f)
	if imgs, err := big.ListImages(context.Background(), nil); err != nil || len(imgs) != 200 {
		t.Fatalf("ListImages = %d, %v", len(imgs), err)
	}
}
