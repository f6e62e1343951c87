package criproxy

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listBackend is a runtime holding another node's sandbox and container
// ("foreign") beside what its clients make.
type listBackend struct {
	backend
	sandboxes, containers []string
}

func (b *listBackend) RunPodSandbox(_ context.Context, r *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	id := "sb-" + r.Config.Metadata.Name
	b.sandboxes = append(b.sandboxes, id)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (b *listBackend) CreateContainer(_ context.Context, r *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	id := "c-" + r.Config.Metadata.Name
	b.containers = append(b.containers, id)
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

func (b *listBackend) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, id := range b.sandboxes {
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{Id: id})
	}
	return resp, nil
}

func (b *listBackend) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	resp := &runtimeapi.ListContainersResponse{}
	for _, id := range b.containers {
		resp.Containers = append(resp.Containers, &runtimeapi.Container{Id: id})
	}
	return resp, nil
}

func (b *listBackend) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	resp := &runtimeapi.ListContainerStatsResponse{}
	for _, id := range b.containers {
		resp.Stats = append(resp.Stats, &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id}})
	}
	return resp, nil
}

// TestPrivate: behind a Private proxy a client's lists hold only what it
// made through the proxy; behind a plain one, everything the runtime has.
func TestPrivate(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "backend.sock"))
	if err != nil {
		t.Fatal(err)
	}
	b := &listBackend{sandboxes: []string{"sb-foreign"}, containers: []string{"c-foreign"}}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, b)
	go srv.Serve(l)
	defer srv.Stop()

	private, err := Start(filepath.Join(dir, "private.sock"), filepath.Join(dir, "backend.sock"), Guard(), Private())
	if err != nil {
		t.Fatal(err)
	}
	defer private.Close()
	plain, err := Start(filepath.Join(dir, "plain.sock"), filepath.Join(dir, "backend.sock"), Guard())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	client := func(p *Proxy) runtimeapi.RuntimeServiceClient {
		conn, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return runtimeapi.NewRuntimeServiceClient(conn)
	}
	ctx := context.Background()
	rs := client(private)
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "mine"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "sb-mine", Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "mine"}}}); err != nil {
		t.Fatal(err)
	}
	lists := func(rs runtimeapi.RuntimeServiceClient) (sandboxes, containers, stats []string) {
		sb, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sb.Items {
			sandboxes = append(sandboxes, s.Id)
		}
		cs, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs.Containers {
			containers = append(containers, c.Id)
		}
		st, err := rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Stats {
			stats = append(stats, s.Attributes.Id)
		}
		return sandboxes, containers, stats
	}
	sb, cs, st := lists(rs)
	if !slices.Equal(sb, []string{"sb-mine"}) || !slices.Equal(cs, []string{"c-mine"}) || !slices.Equal(st, []string{"c-mine"}) {
		t.Errorf("behind the private proxy: sandboxes %v, containers %v, stats %v; want only its own", sb, cs, st)
	}
	// What the private proxy recorded is what its client got.
	calls := private.Calls()
	if r, ok := calls[2].Response().(*runtimeapi.ListPodSandboxResponse); !ok || len(r.Items) != 1 {
		t.Errorf("recorded ListPodSandbox answer %v", calls[2].Response())
	}
	sb, cs, st = lists(client(plain))
	if !slices.Equal(sb, []string{"sb-foreign", "sb-mine"}) || !slices.Equal(cs, []string{"c-foreign", "c-mine"}) || len(st) != 2 {
		t.Errorf("behind the plain proxy: sandboxes %v, containers %v, stats %v; want all", sb, cs, st)
	}
}
