package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Defaults follow kubelet: its CRI client uses --runtime-request-timeout
// (2 minutes) both to connect and for each call, and 16 MiB messages.
const (
	DefaultConnectTimeout = 2 * time.Minute
	DefaultCallTimeout    = 2 * time.Minute
	DefaultMaxMsgSize     = 16 * 1024 * 1024
)

// ErrUnsupportedEndpoint is returned by Dial for an endpoint that is not a
// unix socket.
var ErrUnsupportedEndpoint = errors.New("unsupported CRI endpoint")

// Option configures Dial.
type Option func(*options)

type options struct {
	connectTimeout time.Duration
	callTimeout    time.Duration
	maxMsgSize     int
	dialOptions    []grpc.DialOption
}

// WithConnectTimeout bounds how long Dial waits for the runtime to answer.
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithCallTimeout bounds each call except PullImage, which, as in kubelet,
// is bounded only by its context because pulls may legitimately take long.
// ExecSync gets this timeout plus the command's own.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithMaxMsgSize sets the largest message the client sends or receives.
func WithMaxMsgSize(n int) Option { return func(o *options) { o.maxMsgSize = n } }

// WithDialOptions adds gRPC dial options (interceptors, stats handlers).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// Client is a CRI v1 client over one gRPC connection. It implements Runtime.
// All its errors are classified (see Classify).
type Client struct {
	conn        *grpc.ClientConn
	rt          runtimeapi.RuntimeServiceClient
	img         runtimeapi.ImageServiceClient
	callTimeout time.Duration
	watchdog    *watchdog // nil without a call timeout
}

var (
	_ Runtime              = (*Client)(nil)
	_ ResourceUpdater      = (*Client)(nil)
	_ ContainerStatsReader = (*Client)(nil)
	_ StatsLister          = (*Client)(nil)
	_ ContainerLogReopener = (*Client)(nil)
	_ ImageFsInfoReader    = (*Client)(nil)
	_ Streamer             = (*Client)(nil)
)

// Dial connects to the CRI runtime at endpoint and checks that it serves CRI
// v1 by asking for its version within the connect timeout. An endpoint
// without a scheme is a unix socket path, as in kubelet.
func Dial(ctx context.Context, endpoint string, opts ...Option) (*Client, error) {
	o := options{connectTimeout: DefaultConnectTimeout, callTimeout: DefaultCallTimeout, maxMsgSize: DefaultMaxMsgSize}
	for _, opt := range opts {
		opt(&o)
	}
	target, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	dialOpts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.maxMsgSize), grpc.MaxCallSendMsgSize(o.maxMsgSize)),
		// kubelet reconnects quickly to a restarted runtime; so do we.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}, o.dialOptions...)
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial CRI endpoint %q: %w", endpoint, err)
	}
	c := &Client{
		conn:        conn,
		rt:          runtimeapi.NewRuntimeServiceClient(conn),
		img:         runtimeapi.NewImageServiceClient(conn),
		callTimeout: o.callTimeout,
	}
	if o.callTimeout > 0 {
		c.watchdog = newWatchdog(o.callTimeout)
	}
	vctx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	// WaitForReady makes the version call wait for the connection instead
	// of failing on the first refused attempt, up to the connect timeout.
	if _, err := c.rt.Version(vctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true)); err != nil {
		conn.Close()
		if ctx.Err() == nil && errors.Is(Classify(err), ErrDeadlineExceeded) {
			// Nobody answered within the connect timeout: to the caller
			// that is an unavailable runtime, not a slow call.
			err = &Error{Code: codes.Unavailable, Class: ErrUnavailable, Err: err}
		}
		return nil, fmt.Errorf("connect to CRI endpoint %q: %w", endpoint, Classify(err))
	}
	return c, nil
}

// ParseEndpoint turns a CRI endpoint into a gRPC target. It accepts
// unix:///abs/path, unix://rel/path and a bare path (kubelet's fallback).
func ParseEndpoint(endpoint string) (string, error) {
	if endpoint == "" {
		return "", fmt.Errorf("%w: empty endpoint", ErrUnsupportedEndpoint)
	}
	path := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", fmt.Errorf("%w %q: %v", ErrUnsupportedEndpoint, endpoint, err)
		}
		if u.Scheme != "unix" {
			return "", fmt.Errorf("%w %q: only unix sockets are supported, not %q", ErrUnsupportedEndpoint, endpoint, u.Scheme)
		}
		path = u.Host + u.Path
	}
	if path == "" {
		return "", fmt.Errorf("%w %q: no socket path", ErrUnsupportedEndpoint, endpoint)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrUnsupportedEndpoint, endpoint, err)
	}
	return "unix://" + abs, nil
}

// Conn returns the underlying connection, for CRI calls outside Runtime
// (streaming, stats); the generated runtimeapi clients take it.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection. Calls in flight fail with ErrCanceled.
func (c *Client) Close() error {
	if c.watchdog != nil {
		c.watchdog.close()
	}
	return c.conn.Close()
}

// callCtx bounds one call by the call timeout, as kubelet's CRI client
// does, through the watchdog rather than a deadline per call (see
// watchdog); errors of the call go through classifyCall with the context
// returned.
func (c *Client) callCtx(ctx context.Context) (context.Context, func()) {
	if c.watchdog == nil {
		return ctx, func() {}
	}
	return c.watchdog.start(ctx)
}

// PullImage implements ImageService.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandbox})
	if err != nil {
		return "", Classify(err)
	}
	if resp.ImageRef == "" {
		return "", &Error{Code: codes.Unknown, Err: fmt.Errorf("imageRef of image %q is not set", image.GetImage())}
	}
	return resp.ImageRef, nil
}

// ImageStatus implements ImageService.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	return resp, classifyCall(ctx, err)
}

// ListImages implements ImageService.
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp.Images, nil
}

// RemoveImage implements ImageService.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	return classifyCall(ctx, err)
}

// Version implements RuntimeService.
func (c *Client) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
	return resp, classifyCall(ctx, err)
}

// Status implements RuntimeService.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	return resp, classifyCall(ctx, err)
}

// RunPodSandbox implements RuntimeService.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", classifyCall(ctx, err)
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox implements RuntimeService.
func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return classifyCall(ctx, err)
}

// RemovePodSandbox implements RuntimeService.
func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return classifyCall(ctx, err)
}

// PodSandboxStatus implements RuntimeService.
func (c *Client) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	return resp, classifyCall(ctx, err)
}

// ListPodSandbox implements RuntimeService.
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp.Items, nil
}

// CreateContainer implements RuntimeService.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", classifyCall(ctx, err)
	}
	return resp.ContainerId, nil
}

// StartContainer implements RuntimeService.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return classifyCall(ctx, err)
}

// StopContainer implements RuntimeService. The call may take the
// container's grace period (timeout, in seconds) on top of the call timeout.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) error {
	cctx, cancel := c.extendedCtx(ctx, time.Duration(timeout)*time.Second)
	defer cancel()
	_, err := c.rt.StopContainer(cctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return Classify(err)
}

// RemoveContainer implements RuntimeService.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return classifyCall(ctx, err)
}

// ListContainers implements RuntimeService.
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp.Containers, nil
}

// UpdateContainerResources implements ResourceUpdater.
func (c *Client) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: resources.GetLinux(), Windows: resources.GetWindows(),
	})
	return classifyCall(ctx, err)
}

// ContainerStats implements ContainerStatsReader.
func (c *Client) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	return resp.GetStats(), classifyCall(ctx, err)
}

// ListContainerStats implements StatsLister.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	return resp.GetStats(), classifyCall(ctx, err)
}

// ListPodSandboxStats implements StatsLister.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	return resp.GetStats(), classifyCall(ctx, err)
}

// ReopenContainerLog implements ContainerLogReopener.
func (c *Client) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return classifyCall(ctx, err)
}

// Exec implements Streamer.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.Exec(ctx, req)
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp, nil
}

// Attach implements Streamer.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.Attach(ctx, req)
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp, nil
}

// PortForward implements Streamer.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.PortForward(ctx, req)
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp, nil
}

// ImageFsInfo implements ImageFsInfoReader.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, classifyCall(ctx, err)
	}
	return resp, nil
}

// ContainerStatus implements RuntimeService.
func (c *Client) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	return resp, classifyCall(ctx, err)
}

// ExecSync implements RuntimeService.
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	var cctx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		cctx, cancel = c.extendedCtx(ctx, timeout)
	} else {
		// As kubelet: a command without a timeout is bounded by ctx only.
		cctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	resp, err := c.rt.ExecSync(cctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout.Seconds())})
	if err != nil {
		return nil, nil, Classify(err)
	}
	if resp.ExitCode != 0 {
		return resp.Stdout, resp.Stderr, &ExitError{Cmd: cmd, ExitCode: resp.ExitCode, Stderr: resp.Stderr}
	}
	return resp.Stdout, resp.Stderr, nil
}

func (c *Client) extendedCtx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if c.callTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.callTimeout+extra)
}

// StreamContainerEvents implements ContainerEventStreamer over CRI's
// GetContainerEvents stream. It has no call deadline: it runs until ctx
// ends or the stream breaks. A runtime without the method answers
// Unimplemented, which comes back classified.
func (c *Client) StreamContainerEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error {
	stream, err := c.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return Classify(err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return Classify(err)
		}
		onEvent(ev)
	}
}
