package fake

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

// Server serves any runtime.Runtime (the fake, or a wrapper around another
// runtime) as a CRI v1 endpoint. Methods outside runtime.Runtime answer
// Unimplemented.
type Server struct {
	grpc *grpc.Server
	wg   sync.WaitGroup
}

// NewServer returns a server for rt; start it with Serve or ServeUnix.
func NewServer(rt runtime.Runtime, opts ...grpc.ServerOption) *Server {
	s := &Server{grpc: grpc.NewServer(opts...)}
	runtimeapi.RegisterRuntimeServiceServer(s.grpc, &runtimeServer{rt: rt})
	runtimeapi.RegisterImageServiceServer(s.grpc, &imageServer{rt: rt})
	return s
}

// Serve serves on lis until Stop; it blocks.
func (s *Server) Serve(lis net.Listener) error { return s.grpc.Serve(lis) }

// ServeUnix listens on the unix socket path (replacing a stale socket) and
// serves in the background. It returns the endpoint to give runtime.Dial.
func (s *Server) ServeUnix(path string) (endpoint string, err error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return "", err
	}
	abs, _ := filepath.Abs(path)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.grpc.Serve(lis)
	}()
	return "unix://" + abs, nil
}

// Stop closes every connection at once (calls in flight fail with
// Unavailable on the client), as a runtime that crashes.
func (s *Server) Stop() {
	s.grpc.Stop()
	s.wg.Wait()
}

// GracefulStop stops accepting calls and waits for those in flight.
func (s *Server) GracefulStop() {
	s.grpc.GracefulStop()
	s.wg.Wait()
}

func grpcErr(err error) error {
	if err == nil {
		return nil
	}
	return runtime.GRPCStatus(err).Err()
}

type imageServer struct {
	runtimeapi.UnimplementedImageServiceServer
	rt runtime.Runtime
}

func (s *imageServer) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref, err := s.rt.PullImage(ctx, req.Image, req.Auth, req.SandboxConfig)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.PullImageResponse{ImageRef: ref}, nil
}

func (s *imageServer) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	resp, err := s.rt.ImageStatus(ctx, req.Image, req.Verbose)
	return resp, grpcErr(err)
}

func (s *imageServer) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	imgs, err := s.rt.ListImages(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListImagesResponse{Images: imgs}, nil
}

func (s *imageServer) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	return &runtimeapi.RemoveImageResponse{}, grpcErr(s.rt.RemoveImage(ctx, req.Image))
}

type runtimeServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	rt runtime.Runtime
}

// GetContainerEvents streams the runtime's container events when it has
// them (runtime.ContainerEventStreamer), else answers Unimplemented.
func (s *runtimeServer) GetContainerEvents(req *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	es, ok := s.rt.(runtime.ContainerEventStreamer)
	if !ok {
		return s.UnimplementedRuntimeServiceServer.GetContainerEvents(req, stream)
	}
	var sendErr error
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	err := es.StreamContainerEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) {
		if sendErr == nil {
			if sendErr = stream.Send(ev); sendErr != nil {
				cancel()
			}
		}
	})
	if sendErr != nil {
		return sendErr
	}
	if stream.Context().Err() != nil {
		return nil
	}
	return grpcErr(err)
}

func (s *runtimeServer) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	resp, err := s.rt.Version(ctx, req.Version)
	return resp, grpcErr(err)
}

func (s *runtimeServer) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp, err := s.rt.Status(ctx, req.Verbose)
	return resp, grpcErr(err)
}

func (s *runtimeServer) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	id, err := s.rt.RunPodSandbox(ctx, req.Config, req.RuntimeHandler)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (s *runtimeServer) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return &runtimeapi.StopPodSandboxResponse{}, grpcErr(s.rt.StopPodSandbox(ctx, req.PodSandboxId))
}

func (s *runtimeServer) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	return &runtimeapi.RemovePodSandboxResponse{}, grpcErr(s.rt.RemovePodSandbox(ctx, req.PodSandboxId))
}

func (s *runtimeServer) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	resp, err := s.rt.PodSandboxStatus(ctx, req.PodSandboxId, req.Verbose)
	return resp, grpcErr(err)
}

func (s *runtimeServer) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	items, err := s.rt.ListPodSandbox(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

func (s *runtimeServer) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	id, err := s.rt.CreateContainer(ctx, req.PodSandboxId, req.Config, req.SandboxConfig)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

func (s *runtimeServer) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return &runtimeapi.StartContainerResponse{}, grpcErr(s.rt.StartContainer(ctx, req.ContainerId))
}

func (s *runtimeServer) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	return &runtimeapi.StopContainerResponse{}, grpcErr(s.rt.StopContainer(ctx, req.ContainerId, req.Timeout))
}

func (s *runtimeServer) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	return &runtimeapi.RemoveContainerResponse{}, grpcErr(s.rt.RemoveContainer(ctx, req.ContainerId))
}

func (s *runtimeServer) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	cs, err := s.rt.ListContainers(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListContainersResponse{Containers: cs}, nil
}

func (s *runtimeServer) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := s.rt.ContainerStatus(ctx, req.ContainerId, req.Verbose)
	return resp, grpcErr(err)
}

func (s *runtimeServer) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	ru, ok := s.rt.(runtime.ResourceUpdater)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "UpdateContainerResources is not implemented by the runtime")
	}
	if err := ru.UpdateContainerResources(ctx, req.ContainerId, &runtimeapi.ContainerResources{Linux: req.Linux, Windows: req.Windows}); err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func (s *runtimeServer) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	sr, ok := s.rt.(runtime.ContainerStatsReader)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "ContainerStats is not implemented by the runtime")
	}
	st, err := sr.ContainerStats(ctx, req.ContainerId)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

func (s *runtimeServer) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	stdout, stderr, err := s.rt.ExecSync(ctx, req.ContainerId, req.Cmd, time.Duration(req.Timeout)*time.Second)
	var exit *runtime.ExitError
	if errors.As(err, &exit) {
		return &runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: exit.ExitCode}, nil
	}
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr}, nil
}
