package runtime

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageService is the part of the CRI image service that pod start uses.
// Its methods have the same signatures as the matching methods of
// k8s.io/cri-api/pkg/apis.ImageManagerService, so kubelet's own clients and
// cri-api's testing fakes satisfy it unchanged.
type ImageService interface {
	// PullImage pulls an image with the given credentials (nil for an
	// anonymous pull) and returns the image reference the runtime stored.
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	// ImageStatus reports an image; a nil Image in the response means the
	// image is not present, which is not an error.
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	// ListImages lists the images that match filter (all when nil).
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	// RemoveImage removes an image; removing an absent image succeeds.
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

// Versioner reports the runtime's name and version.
type Versioner interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
}

// SandboxManager runs and inspects pod sandboxes.
type SandboxManager interface {
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}

// ContainerManager creates, runs and inspects containers, and runs
// commands in them (for lifecycle hooks).
type ContainerManager interface {
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	// ExecSync runs cmd in the container and waits at most timeout (0: no
	// limit). A non-zero exit is reported as an error that wraps *ExitError.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// RuntimeService is the part of the CRI runtime service that pod start uses.
// Its methods have the same signatures as the matching methods of
// k8s.io/cri-api/pkg/apis.RuntimeService.
type RuntimeService interface {
	Versioner
	// Status reports whether the runtime and its network are ready.
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	SandboxManager
	ContainerManager
}

// Runtime is a value that serves both CRI services, as a container runtime
// endpoint does. Both the gRPC client from Dial and runtime/fake are one.
type Runtime interface {
	ImageService
	RuntimeService
}

// PullProgress is how far a pull has come.
type PullProgress struct {
	// BytesDone and BytesTotal are the layer bytes fetched so far and in
	// all (0 when unknown).
	BytesDone, BytesTotal int64
}

// ProgressPuller is an optional ability of an ImageService: a pull that
// reports progress as it goes. Callers discover it by type assertion and
// fall back to PullImage.
type ProgressPuller interface {
	PullImageWithProgress(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig, progress func(PullProgress)) (string, error)
}

// ContainerEventStreamer is an optional ability of a RuntimeService: it
// streams container events (CRI GetContainerEvents: created, started,
// stopped, deleted) to onEvent until ctx ends or the stream breaks, and
// returns why it ended. Callers discover it by type assertion and fall
// back to relisting.
type ContainerEventStreamer interface {
	StreamContainerEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error
}

// ResourceUpdater is an optional ability of a RuntimeService: it changes
// a running container's CPU and memory in place (CRI
// UpdateContainerResources), which in-place pod resize needs. Callers
// discover it by type assertion; a runtime without it cannot resize.
type ResourceUpdater interface {
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
}

// ContainerStatsReader is an optional ability of a RuntimeService: a
// container's resource use (CRI ContainerStats). In-place resize reads the
// memory use before it lowers a memory limit.
type ContainerStatsReader interface {
	ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error)
}

// StatsLister is an optional ability of a RuntimeService: the resource use
// of many containers or sandboxes in one call (CRI ListContainerStats and
// ListPodSandboxStats), what eviction and the node's stats read.
type StatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
}

// ContainerLogReopener is an optional ability of a RuntimeService: the
// runtime reopens a container's log file (CRI ReopenContainerLog), which
// log rotation calls after renaming the live file.
type ContainerLogReopener interface {
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// ImageFsInfoReader is an optional ability of an ImageService: the use of
// the filesystems that hold images and containers' writable layers (CRI
// ImageFsInfo), what image garbage collection and eviction read.
type ImageFsInfoReader interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Streamer is an optional ability of a RuntimeService: it prepares an
// exec, attach or port-forward session on the runtime's streaming server
// and answers with the URL to reach it (CRI Exec, Attach, PortForward).
// The node's API proxies a client's upgraded connection to that URL, as
// kubelet does by default.
type Streamer interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}
