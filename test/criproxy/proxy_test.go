package criproxy

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend is a tiny runtime: it answers Version, RunPodSandbox,
// StopPodSandbox and ListImages.
type backend struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
	stopped []string
}

func (b *backend) Version(_ context.Context, r *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: r.Version, RuntimeName: "test"}, nil
}

func (b *backend) RunPodSandbox(_ context.Context, r *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb-" + r.Config.Metadata.Name}, nil
}

func (b *backend) StopPodSandbox(_ context.Context, r *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	b.stopped = append(b.stopped, r.PodSandboxId)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (b *backend) ListImages(context.Context, *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	return nil, status.Error(codes.Unavailable, "no images today")
}

func TestProxyForwardsAndRecords(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "backend.sock"))
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, b)
	runtimeapi.RegisterImageServiceServer(srv, b)
	go srv.Serve(l)
	defer srv.Stop()

	p, err := Start(filepath.Join(dir, "proxy.sock"), filepath.Join(dir, "backend.sock"), Guard())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs, is := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()

	v, err := rs.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil || v.RuntimeName != "test" || v.Version != "v1" {
		t.Fatalf("Version = %v, %v", v, err)
	}
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Uid: "u"}, Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"k": "v"}}}
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "sb-a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "someone-elses"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("guarded stop: %v", err)
	}
	if _, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{}); status.Code(err) != codes.Unavailable || status.Convert(err).Message() != "no images today" {
		t.Fatalf("error not passed through: %v", err)
	}
	if len(b.stopped) != 1 || b.stopped[0] != "sb-a" {
		t.Fatalf("backend stopped %v", b.stopped)
	}

	tests := []struct {
		name   string
		method string
		req    proto.Message
		code   codes.Code
	}{
		{name: "version", method: "/runtime.v1.RuntimeService/Version", req: &runtimeapi.VersionRequest{Version: "v1"}},
		{name: "run", method: "/runtime.v1.RuntimeService/RunPodSandbox", req: &runtimeapi.RunPodSandboxRequest{Config: cfg}},
		{name: "stop owned", method: "/runtime.v1.RuntimeService/StopPodSandbox", req: &runtimeapi.StopPodSandboxRequest{PodSandboxId: "sb-a"}},
		{name: "stop refused", method: "/runtime.v1.RuntimeService/StopPodSandbox", req: &runtimeapi.StopPodSandboxRequest{PodSandboxId: "someone-elses"}, code: codes.PermissionDenied},
		{name: "images", method: "/runtime.v1.ImageService/ListImages", req: &runtimeapi.ListImagesRequest{}, code: codes.Unavailable},
	}
	calls := p.Calls()
	if len(calls) != len(tests) {
		t.Fatalf("%d calls recorded, want %d", len(calls), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := calls[i]
			if c.Method != tt.method || !proto.Equal(c.Request(), tt.req) || status.Code(c.Err) != tt.code {
				t.Errorf("call %d = %s %v (%v), want %s %v (%v)", i, c.Method, c.Request(), c.Err, tt.method, tt.req, tt.code)
			}
		})
	}
	if r, ok := calls[1].Response().(*runtimeapi.RunPodSandboxResponse); !ok || r.PodSandboxId != "sb-a" || !p.Owned("sb-a") {
		t.Errorf("RunPodSandbox response %v", calls[1].Response())
	}
}

// TestCountOnly: with CountOnly the proxy forwards as before and counts
// calls by method, keeping none of them.
func TestCountOnly(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "backend.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, &backend{})
	go srv.Serve(l)
	defer srv.Stop()
	p, err := Start(filepath.Join(dir, "proxy.sock"), filepath.Join(dir, "backend.sock"), CountOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	for i := 0; i < 3; i++ {
		if _, err := rs.Version(context.Background(), &runtimeapi.VersionRequest{Version: "v1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rs.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: "x"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"/runtime.v1.RuntimeService/Version": 3, "/runtime.v1.RuntimeService/StopPodSandbox": 1}
	if got := p.Counts(); len(got) != len(want) || got["/runtime.v1.RuntimeService/Version"] != 3 || got["/runtime.v1.RuntimeService/StopPodSandbox"] != 1 {
		t.Errorf("Counts() = %v, want %v", got, want)
	}
	if c := p.Calls(); len(c) != 0 {
		t.Errorf("Calls() kept %d calls, want none", len(c))
	}
}
