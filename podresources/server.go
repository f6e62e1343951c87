package podresources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Kubelet's constants for the pod-resources socket and its rate limit.
const (
	DefaultSocket      = "/var/lib/kubelet/pod-resources/kubelet.sock"
	DefaultQPS         = 100
	DefaultBurstTokens = 10
)

// ErrLimitExceeded is kubelet's answer beyond the rate limit.
var ErrLimitExceeded = status.Error(codes.ResourceExhausted, "rejected by rate limit")

// PodsProvider gives the node's pods (kubelet's PodsProvider).
type PodsProvider interface {
	// ActivePods are the pods admitted and not terminated (kubelet's
	// GetActivePods).
	ActivePods() []*corev1.Pod
	// PodByName finds a pod of the node.
	PodByName(namespace, name string) (*corev1.Pod, bool)
}

// DevicesProvider gives the device plugins' devices
// (devicemanager.Manager is one).
type DevicesProvider interface {
	UpdateAllocatedDevices(active []*corev1.Pod)
	GetDevices(podUID, containerName string) []*podresourcesv1.ContainerDevices
	GetAllocatableDevices() []*podresourcesv1.ContainerDevices
}

// DynamicResourcesProvider gives a container's DRA claims' devices
// (kubelet's DRA manager).
type DynamicResourcesProvider interface {
	GetDynamicResources(pod *corev1.Pod, container *corev1.Container) []*podresourcesv1.DynamicResource
}

// Option configures a Server.
type Option func(*Server)

// WithDevices sets the devices provider (default: no devices).
func WithDevices(d DevicesProvider) Option { return func(s *Server) { s.devices = d } }

// WithDynamicResources sets the DRA provider (default: none).
func WithDynamicResources(d DynamicResourcesProvider) Option {
	return func(s *Server) { s.dynamic = d }
}

// Server implements podresourcesv1.PodResourcesListerServer.
type Server struct {
	pods    PodsProvider
	devices DevicesProvider
	dynamic DynamicResourcesProvider
	podresourcesv1.UnsafePodResourcesListerServer
}

// New returns a Server over pods (required).
func New(pods PodsProvider, opts ...Option) (*Server, error) {
	if pods == nil {
		return nil, errors.New("podresources: a PodsProvider is required")
	}
	s := &Server{pods: pods}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

var _ podresourcesv1.PodResourcesListerServer = (*Server)(nil)

// List is kubelet's v1 List.
func (s *Server) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	pods := s.pods.ActivePods()
	if s.devices != nil {
		s.devices.UpdateAllocatedDevices(pods)
	}
	out := make([]*podresourcesv1.PodResources, 0, len(pods))
	for _, p := range pods {
		if p != nil {
			out = append(out, s.podResources(p))
		}
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: out}, nil
}

// Get is kubelet's v1 Get.
func (s *Server) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	p, ok := s.pods.PodByName(req.PodNamespace, req.PodName)
	if !ok || p == nil {
		return nil, fmt.Errorf("pod %s in namespace %s not found", req.PodName, req.PodNamespace)
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: s.podResources(p)}, nil
}

// GetAllocatableResources is kubelet's v1 GetAllocatableResources.
func (s *Server) GetAllocatableResources(ctx context.Context, _ *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	resp := &podresourcesv1.AllocatableResourcesResponse{}
	if s.devices != nil {
		resp.Devices = s.devices.GetAllocatableDevices()
	}
	return resp, nil
}

func (s *Server) podResources(p *corev1.Pod) *podresourcesv1.PodResources {
	r := &podresourcesv1.PodResources{Name: p.Name, Namespace: p.Namespace,
		Containers: make([]*podresourcesv1.ContainerResources, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		r.Containers = append(r.Containers, s.containerResources(p, c))
	}
	for i := range p.Spec.Containers {
		r.Containers = append(r.Containers, s.containerResources(p, &p.Spec.Containers[i]))
	}
	return r
}

func (s *Server) containerResources(p *corev1.Pod, c *corev1.Container) *podresourcesv1.ContainerResources {
	cr := &podresourcesv1.ContainerResources{Name: c.Name}
	if s.devices != nil {
		cr.Devices = s.devices.GetDevices(string(p.UID), c.Name)
	}
	if s.dynamic != nil {
		cr.DynamicResources = s.dynamic.GetDynamicResources(p, c)
	}
	return cr
}

// Serve serves srv on the unix socket path (kubelet's
// <root-dir>/pod-resources/kubelet.sock) with kubelet's rate limit, until
// ctx ends; then it stops the server and returns nil. The socket's
// directory is created (0750); a stale socket at path is replaced, any
// other file there is refused.
func Serve(ctx context.Context, srv podresourcesv1.PodResourcesListerServer, path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("podresources: socket path %q is not absolute", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("podresources: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	limiter := rate.NewLimiter(rate.Limit(DefaultQPS), DefaultBurstTokens)
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !limiter.Allow() {
			return nil, ErrLimitExceeded
		}
		return h(ctx, req)
	}))
	podresourcesv1.RegisterPodResourcesListerServer(gs, srv)
	done := make(chan error, 1)
	go func() { done <- gs.Serve(ln) }()
	select {
	case <-ctx.Done():
		gs.Stop()
		<-done
		return nil
	case err := <-done:
		return err
	}
}
