package fake_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// serve serves f on a unix socket and returns a gRPC client of it, for the
// calls runtime.Client does not make.
func serve(t *testing.T, f *fake.Runtime) (*runtime.Client, runtimeapi.RuntimeServiceClient) {
	t.Helper()
	srv := fake.NewServer(f)
	ep, err := srv.ServeUnix(filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := runtime.Dial(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Stop()
	})
	return c, runtimeapi.NewRuntimeServiceClient(c.Conn())
}

// RuntimeConfig answers the driver WithCgroupDriver sets, Unimplemented
// without it (kubelet then falls back on its configuration), in process
// and over the wire.
func TestRuntimeConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts []fake.Option
		want runtimeapi.CgroupDriver
		code codes.Code
	}{
		{name: "none", code: codes.Unimplemented},
		{name: "cgroupfs", opts: []fake.Option{fake.WithCgroupDriver(runtimeapi.CgroupDriver_CGROUPFS)}, want: runtimeapi.CgroupDriver_CGROUPFS},
		{name: "systemd", opts: []fake.Option{fake.WithCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD)}, want: runtimeapi.CgroupDriver_SYSTEMD},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fake.New(tt.opts...)
			resp, err := f.RuntimeConfig(ctx)
			if tt.code == codes.Unimplemented {
				if !errors.Is(err, runtime.ErrUnimplemented) {
					t.Errorf("RuntimeConfig = %v, %v; want Unimplemented", resp, err)
				}
			} else if err != nil || resp.GetLinux().GetCgroupDriver() != tt.want {
				t.Errorf("RuntimeConfig = %v, %v; want %v", resp, err, tt.want)
			}
			_, conn := serve(t, f)
			wresp, err := conn.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
			if status.Code(err) != tt.code {
				t.Errorf("over the wire: RuntimeConfig error %v, want %v", err, tt.code)
			}
			if err == nil && wresp.GetLinux().GetCgroupDriver() != tt.want {
				t.Errorf("over the wire: RuntimeConfig = %v, want %v", wresp, tt.want)
			}
			if n := f.CallCount("RuntimeConfig"); n != 2 {
				t.Errorf("RuntimeConfig recorded %d times, want 2", n)
			}
		})
	}
}

func TestUpdateRuntimeConfig(t *testing.T) {
	t.Parallel()
	f := fake.New()
	_, conn := serve(t, f)
	cfg := &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "10.244.1.0/24"}}
	if _, err := conn.UpdateRuntimeConfig(context.Background(), &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg}); err != nil {
		t.Fatal(err)
	}
	if got := f.PodCIDR(); got != "10.244.1.0/24" {
		t.Errorf("PodCIDR = %q", got)
	}
	calls := f.Calls() // Dial's Version, then the update
	if len(calls) != 2 || calls[1].Method != "UpdateRuntimeConfig" ||
		!proto.Equal(calls[1].Request, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg}) {
		t.Errorf("calls = %v", calls)
	}
}

// Status reports no handlers and features by default (containerd 1.6),
// and those set, such as containerd 2.x's, over the wire too.
func TestStatusHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := fake.New().Status(ctx, false)
	if err != nil || len(st.GetRuntimeHandlers()) != 0 || st.GetFeatures() != nil || len(st.GetStatus().GetConditions()) != 2 {
		t.Errorf("default Status = %v, %v", st, err)
	}
	f := fake.New(fake.WithRuntimeHandlers(fake.ContainerdHandlers()...), fake.WithRuntimeFeatures(fake.ContainerdFeatures()))
	c, _ := serve(t, f)
	st, err = c.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	hs := st.GetRuntimeHandlers()
	if len(hs) != 2 || hs[0].Name != "" || hs[1].Name != "runc" || !hs[0].GetFeatures().GetUserNamespaces() || !hs[1].GetFeatures().GetRecursiveReadOnlyMounts() {
		t.Errorf("handlers = %v", hs)
	}
	if !st.GetFeatures().GetSupplementalGroupsPolicy() {
		t.Errorf("features = %v", st.GetFeatures())
	}
	// The answer is a copy: changing it changes nothing in the fake.
	hs[0].Name = "changed"
	if st, _ := f.Status(ctx, false); st.RuntimeHandlers[0].Name != "" {
		t.Errorf("Status shares its handlers: %v", st.RuntimeHandlers)
	}
}

func TestPodSandboxStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := fake.New(fake.WithImages("busybox:1.35"))
	sb := sandbox(t, f, "p", false)
	id, err := f.CreateContainer(ctx, sb, containerCfg("app"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetMemoryUsage(id, 5<<20); err != nil {
		t.Fatal(err)
	}
	_, conn := serve(t, f)
	resp, err := conn.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	st := resp.GetStats()
	if st.GetAttributes().GetId() != sb || len(st.GetLinux().GetContainers()) != 1 || st.GetLinux().GetMemory().GetWorkingSetBytes().GetValue() != 5<<20 {
		t.Errorf("PodSandboxStats = %v", st)
	}
	list, err := f.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{Id: sb})
	if err != nil || len(list) != 1 || list[0].GetLinux().GetMemory().GetUsageBytes().GetValue() != 5<<20 {
		t.Errorf("ListPodSandboxStats = %v, %v", list, err)
	}
	if _, err := conn.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: "absent"}); status.Code(err) != codes.NotFound {
		t.Errorf("PodSandboxStats(absent) = %v, want NotFound", err)
	}
	if _, err := f.PodSandboxStats(ctx, "absent"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("in process: PodSandboxStats(absent) = %v, want ErrNotFound", err)
	}
}

// The scripting helpers take the new methods' names.
func TestHostMethodsScriptable(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithCgroupDriver(runtimeapi.CgroupDriver_CGROUPFS))
	boom := status.Error(codes.Internal, "boom")
	f.FailNext("RuntimeConfig", 1, boom)
	if _, err := f.RuntimeConfig(context.Background()); status.Code(err) != codes.Internal {
		t.Errorf("RuntimeConfig after FailNext = %v", err)
	}
	if _, err := f.RuntimeConfig(context.Background()); err != nil {
		t.Errorf("second RuntimeConfig = %v", err)
	}
	f.LoseAnswer("PodSandboxStats", 1)
	f.FailNext("UpdateRuntimeConfig", 1, boom)
	if err := f.UpdateRuntimeConfig(context.Background(), &runtimeapi.RuntimeConfig{}); status.Code(err) != codes.Internal {
		t.Errorf("UpdateRuntimeConfig after FailNext = %v", err)
	}
}

// WithLogFiles: the log file is made at start beneath the sandbox's log
// directory, and again at ReopenContainerLog after a rotation.
func TestLogFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		logFiles    bool
		dir, path   string
		wantFile    string // relative to the test directory; "" for none
		wantStartOK bool
	}{
		{name: "created at start", logFiles: true, dir: "pods/ns_p_uid", path: "app/0.log", wantFile: "pods/ns_p_uid/app/0.log", wantStartOK: true},
		{name: "option off", logFiles: false, dir: "pods/ns_p_uid", path: "app/0.log", wantStartOK: true},
		{name: "no log directory", logFiles: true, path: "", dir: "", wantStartOK: true},
		{name: "no log path", logFiles: true, dir: "pods/ns_p_uid", path: "", wantStartOK: true},
		{name: "directory is a file", logFiles: true, dir: "file", path: "app/0.log", wantStartOK: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var opts []fake.Option
			if tt.logFiles {
				opts = append(opts, fake.WithLogFiles())
			}
			f := fake.New(append(opts, fake.WithImages("busybox:1.35"))...)
			cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "uid"}}
			if tt.dir != "" {
				cfg.LogDirectory = filepath.Join(root, tt.dir)
			}
			sb, err := f.RunPodSandbox(ctx, cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			cc := containerCfg("app")
			cc.LogPath = tt.path
			id, err := f.CreateContainer(ctx, sb, cc, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantFile != "" {
				if _, err := os.Stat(filepath.Join(root, tt.wantFile)); err == nil {
					t.Errorf("log file exists before the container started")
				}
			}
			err = f.StartContainer(ctx, id)
			if (err == nil) != tt.wantStartOK {
				t.Fatalf("StartContainer = %v, want ok %v", err, tt.wantStartOK)
			}
			if err != nil {
				st, _ := f.ContainerStatus(ctx, id, false)
				if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
					t.Errorf("after a failed start the container is %v, want created", st.GetStatus().GetState())
				}
				return
			}
			files := 0
			filepath.Walk(root, func(_ string, info os.FileInfo, _ error) error {
				if info != nil && !info.IsDir() && info.Name() != "file" {
					files++
				}
				return nil
			})
			if tt.wantFile == "" {
				if files != 0 {
					t.Errorf("%d log files made, want none", files)
				}
				return
			}
			if files != 1 {
				t.Errorf("%d files made, want 1", files)
			}
			path := filepath.Join(root, tt.wantFile)
			st, _ := f.ContainerStatus(ctx, id, false)
			if st.GetStatus().GetLogPath() != path {
				t.Errorf("LogPath = %q, want %q", st.GetStatus().GetLogPath(), path)
			}
			// What is written stays through a reopen; a file rotated away
			// comes back, empty, at ReopenContainerLog.
			if err := os.WriteFile(path, []byte("line\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := f.ReopenContainerLog(ctx, id); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != "line\n" {
				t.Errorf("after reopen the log holds %q", b)
			}
			if err := os.Rename(path, path+".rotated"); err != nil {
				t.Fatal(err)
			}
			if err := f.ReopenContainerLog(ctx, id); err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(path); err != nil || info.Size() != 0 {
				t.Errorf("after rotation and reopen: %v, %v", info, err)
			}
		})
	}
}
