package fake

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

// AnswerFunc sees a call after the runtime did it and decides what the
// caller hears: the response (the CRI response message, nil on error) and
// the error, changed or not. Returning an error after a success models an
// answer lost on the way: the runtime did the work, the caller does not
// know. It must not modify req, and a response it returns must be of the
// method's response type (another type reads as an empty answer).
type AnswerFunc func(ctx context.Context, method string, req, resp proto.Message, err error) (proto.Message, error)

type answerer struct{ fn AnswerFunc }

// InterceptAnswer adds an answer interceptor to the fake and returns a
// function that removes it. It runs after every call, outside the
// runtime's lock, on the call's answer; several run in the order they were
// added, each seeing the answer the previous one gave. An error it returns
// is classified, as every error of the fake. Because it acts in the fake,
// it changes answers in process and over the wire (NewServer) alike.
func (r *Runtime) InterceptAnswer(f AnswerFunc) (remove func()) {
	a := &answerer{fn: f}
	r.mu.Lock()
	r.answerers = append(r.answerers, a)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, x := range r.answerers {
			if x == a {
				r.answerers = append(r.answerers[:i:i], r.answerers[i+1:]...)
				return
			}
		}
	}
}

// LoseAnswer makes the next n successful calls of method take effect in
// the fake while their caller hears codes.Unavailable, as if the
// connection broke before the answer arrived: after a lost CreateContainer
// the container exists, but the caller never learnt its ID. Calls that
// fail are not counted.
func (r *Runtime) LoseAnswer(method string, n int) {
	r.InterceptAnswer(LoseAnswers(method, n))
}

// answer runs the answer interceptors over a call's outcome; an error one
// of them made is classified. It has the shape of an AnswerFunc.
func (r *Runtime) answer(ctx context.Context, method string, req, resp proto.Message, err error) (proto.Message, error) {
	r.mu.Lock()
	answerers := append([]*answerer(nil), r.answerers...)
	r.mu.Unlock()
	in := err
	for _, a := range answerers {
		resp, err = a.fn(ctx, method, req, resp, err)
	}
	if err != in {
		err = runtime.Classify(err)
	}
	return resp, err
}

// bare is the fake without its answer interceptors. Runtime's CRI methods
// are bare's, seen through answering with Runtime.answer as the AnswerFunc,
// so that the interceptors see each answer in the CRI message shape.
type bare Runtime

func (r *Runtime) answering() *answering { return &answering{rt: (*bare)(r), f: r.answer} }

// Answering wraps rt (the fake, or any runtime.Runtime, such as a client
// of a real runtime) so that f sees and may change every answer. Serve the
// result with NewServer to change answers over the wire too. The result
// reports pull progress (runtime.ProgressPuller) when rt does, and streams
// container events (runtime.ContainerEventStreamer) when rt does, else
// answers runtime.ErrUnimplemented as a runtime without the stream does.
// On the fake itself, InterceptAnswer does the same without a wrapper.
func Answering(rt runtime.Runtime, f AnswerFunc) runtime.Runtime { return &answering{rt: rt, f: f} }

// LoseAnswers is an AnswerFunc that, for the next n successful calls of
// method, reports codes.Unavailable ("connection reset by peer") although
// the call took effect (see LoseAnswer).
func LoseAnswers(method string, n int) AnswerFunc {
	checkMethod(method)
	var mu sync.Mutex
	left := n
	return func(_ context.Context, m string, _, resp proto.Message, err error) (proto.Message, error) {
		if m != method || err != nil {
			return resp, err
		}
		mu.Lock()
		defer mu.Unlock()
		if left <= 0 {
			return resp, err
		}
		left--
		return nil, runtime.Classify(status.Error(codes.Unavailable, "connection reset by peer"))
	}
}

type answering struct {
	rt runtime.Runtime
	f  AnswerFunc
}

var (
	_ runtime.ProgressPuller         = (*answering)(nil)
	_ runtime.ContainerEventStreamer = (*answering)(nil)
	_ runtime.ResourceUpdater        = (*answering)(nil)
	_ runtime.ContainerStatsReader   = (*answering)(nil)
)

// as returns m as a T, or T's zero value (a nil message) when it is not.
func as[T proto.Message](m proto.Message) T {
	t, _ := m.(T)
	return t
}

func (a *answering) answer(ctx context.Context, method string, req, resp proto.Message, err error) (proto.Message, error) {
	if err != nil {
		resp = nil
	}
	return a.f(ctx, method, req, resp, err)
}

// PullImageWithProgress pulls with progress when the wrapped runtime can,
// else as PullImage; its answer is PullImage's.
func (a *answering) PullImageWithProgress(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig, progress func(runtime.PullProgress)) (string, error) {
	var ref string
	var err error
	if pp, ok := a.rt.(runtime.ProgressPuller); ok {
		ref, err = pp.PullImageWithProgress(ctx, image, auth, sb, progress)
	} else {
		ref, err = a.rt.PullImage(ctx, image, auth, sb)
	}
	resp, err := a.answer(ctx, "PullImage", &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sb}, &runtimeapi.PullImageResponse{ImageRef: ref}, err)
	return as[*runtimeapi.PullImageResponse](resp).GetImageRef(), err
}

// StreamContainerEvents passes the wrapped runtime's events through
// unchanged.
func (a *answering) StreamContainerEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error {
	if es, ok := a.rt.(runtime.ContainerEventStreamer); ok {
		return es.StreamContainerEvents(ctx, onEvent)
	}
	return runtime.Classify(status.Error(codes.Unimplemented, "GetContainerEvents is not implemented by the runtime"))
}

func (a *answering) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	ref, err := a.rt.PullImage(ctx, image, auth, sb)
	resp, err := a.answer(ctx, "PullImage", &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sb}, &runtimeapi.PullImageResponse{ImageRef: ref}, err)
	return as[*runtimeapi.PullImageResponse](resp).GetImageRef(), err
}

func (a *answering) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	r, err := a.rt.ImageStatus(ctx, image, verbose)
	resp, err := a.answer(ctx, "ImageStatus", &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose}, r, err)
	return as[*runtimeapi.ImageStatusResponse](resp), err
}

func (a *answering) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	imgs, err := a.rt.ListImages(ctx, filter)
	resp, err := a.answer(ctx, "ListImages", &runtimeapi.ListImagesRequest{Filter: filter}, &runtimeapi.ListImagesResponse{Images: imgs}, err)
	return as[*runtimeapi.ListImagesResponse](resp).GetImages(), err
}

func (a *answering) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	err := a.rt.RemoveImage(ctx, image)
	_, err = a.answer(ctx, "RemoveImage", &runtimeapi.RemoveImageRequest{Image: image}, &runtimeapi.RemoveImageResponse{}, err)
	return err
}

func (a *answering) Version(ctx context.Context, v string) (*runtimeapi.VersionResponse, error) {
	r, err := a.rt.Version(ctx, v)
	resp, err := a.answer(ctx, "Version", &runtimeapi.VersionRequest{Version: v}, r, err)
	return as[*runtimeapi.VersionResponse](resp), err
}

func (a *answering) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	r, err := a.rt.Status(ctx, verbose)
	resp, err := a.answer(ctx, "Status", &runtimeapi.StatusRequest{Verbose: verbose}, r, err)
	return as[*runtimeapi.StatusResponse](resp), err
}

func (a *answering) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	id, err := a.rt.RunPodSandbox(ctx, cfg, handler)
	resp, err := a.answer(ctx, "RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler}, &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, err)
	return as[*runtimeapi.RunPodSandboxResponse](resp).GetPodSandboxId(), err
}

func (a *answering) StopPodSandbox(ctx context.Context, id string) error {
	err := a.rt.StopPodSandbox(ctx, id)
	_, err = a.answer(ctx, "StopPodSandbox", &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}, &runtimeapi.StopPodSandboxResponse{}, err)
	return err
}

func (a *answering) RemovePodSandbox(ctx context.Context, id string) error {
	err := a.rt.RemovePodSandbox(ctx, id)
	_, err = a.answer(ctx, "RemovePodSandbox", &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}, &runtimeapi.RemovePodSandboxResponse{}, err)
	return err
}

func (a *answering) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r, err := a.rt.PodSandboxStatus(ctx, id, verbose)
	resp, err := a.answer(ctx, "PodSandboxStatus", &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose}, r, err)
	return as[*runtimeapi.PodSandboxStatusResponse](resp), err
}

func (a *answering) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	items, err := a.rt.ListPodSandbox(ctx, filter)
	resp, err := a.answer(ctx, "ListPodSandbox", &runtimeapi.ListPodSandboxRequest{Filter: filter}, &runtimeapi.ListPodSandboxResponse{Items: items}, err)
	return as[*runtimeapi.ListPodSandboxResponse](resp).GetItems(), err
}

func (a *answering) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbc *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := a.rt.CreateContainer(ctx, sb, cfg, sbc)
	resp, err := a.answer(ctx, "CreateContainer", &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: cfg, SandboxConfig: sbc}, &runtimeapi.CreateContainerResponse{ContainerId: id}, err)
	return as[*runtimeapi.CreateContainerResponse](resp).GetContainerId(), err
}

func (a *answering) StartContainer(ctx context.Context, id string) error {
	err := a.rt.StartContainer(ctx, id)
	_, err = a.answer(ctx, "StartContainer", &runtimeapi.StartContainerRequest{ContainerId: id}, &runtimeapi.StartContainerResponse{}, err)
	return err
}

func (a *answering) StopContainer(ctx context.Context, id string, timeout int64) error {
	err := a.rt.StopContainer(ctx, id, timeout)
	_, err = a.answer(ctx, "StopContainer", &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}, &runtimeapi.StopContainerResponse{}, err)
	return err
}

// UpdateContainerResources passes through to the wrapped runtime when it
// can update resources, else answers runtime.ErrUnimplemented.
func (a *answering) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	var err error
	if ru, ok := a.rt.(runtime.ResourceUpdater); ok {
		err = ru.UpdateContainerResources(ctx, id, resources)
	} else {
		err = runtime.Classify(status.Error(codes.Unimplemented, "UpdateContainerResources is not implemented by the runtime"))
	}
	_, err = a.answer(ctx, "UpdateContainerResources", &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources.GetLinux()}, &runtimeapi.UpdateContainerResourcesResponse{}, err)
	return err
}

// ContainerStats passes through to the wrapped runtime when it reports
// stats, else answers runtime.ErrUnimplemented.
func (a *answering) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	var st *runtimeapi.ContainerStats
	var err error
	if sr, ok := a.rt.(runtime.ContainerStatsReader); ok {
		st, err = sr.ContainerStats(ctx, id)
	} else {
		err = runtime.Classify(status.Error(codes.Unimplemented, "ContainerStats is not implemented by the runtime"))
	}
	resp, err := a.answer(ctx, "ContainerStats", &runtimeapi.ContainerStatsRequest{ContainerId: id}, &runtimeapi.ContainerStatsResponse{Stats: st}, err)
	return as[*runtimeapi.ContainerStatsResponse](resp).GetStats(), err
}

func (a *answering) RemoveContainer(ctx context.Context, id string) error {
	err := a.rt.RemoveContainer(ctx, id)
	_, err = a.answer(ctx, "RemoveContainer", &runtimeapi.RemoveContainerRequest{ContainerId: id}, &runtimeapi.RemoveContainerResponse{}, err)
	return err
}

func (a *answering) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	cs, err := a.rt.ListContainers(ctx, filter)
	resp, err := a.answer(ctx, "ListContainers", &runtimeapi.ListContainersRequest{Filter: filter}, &runtimeapi.ListContainersResponse{Containers: cs}, err)
	return as[*runtimeapi.ListContainersResponse](resp).GetContainers(), err
}

func (a *answering) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r, err := a.rt.ContainerStatus(ctx, id, verbose)
	resp, err := a.answer(ctx, "ContainerStatus", &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose}, r, err)
	return as[*runtimeapi.ContainerStatusResponse](resp), err
}

func (a *answering) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	stdout, stderr, err := a.rt.ExecSync(ctx, id, cmd, timeout)
	// A non-zero exit is an error that still carries the output.
	var code int32
	var exit *runtime.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode
	}
	resp := proto.Message(&runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: code})
	if err != nil && exit == nil {
		resp = nil
	}
	resp, err = a.f(ctx, "ExecSync", &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second)}, resp, err)
	r := as[*runtimeapi.ExecSyncResponse](resp)
	return r.GetStdout(), r.GetStderr(), err
}
