package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// transports give a scenario the fake itself and a client of the fake
// served on a unix socket.
var transports = []struct {
	name string
	dial func(t *testing.T, f *fake.Runtime) runtime.Runtime
}{
	{"in-process", func(_ *testing.T, f *fake.Runtime) runtime.Runtime { return f }},
	{"unix-socket", func(t *testing.T, f *fake.Runtime) runtime.Runtime {
		c, _ := wiretest.Serve(t, f, runtime.WithCallTimeout(10*time.Second))
		return c
	}},
}

// TestLoseAnswer: a lost answer leaves the work done in the fake while the
// caller hears Unavailable, once per count, in process and over the wire.
func TestLoseAnswer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := fake.New(fake.WithImages("busybox:1.35"))
			rt := tr.dial(t, f)
			ctx := context.Background()
			sb := sandbox(t, f, "p", false)
			f.LoseAnswer("CreateContainer", 1)
			f.LoseAnswer("StartContainer", 1)

			id, err := rt.CreateContainer(ctx, sb, containerCfg("app"), nil)
			if !errors.Is(err, runtime.ErrUnavailable) || id != "" {
				t.Fatalf("first create = %q, %v; want the answer lost", id, err)
			}
			list, _ := f.ListContainers(ctx, nil)
			if len(list) != 1 || list[0].State != runtimeapi.ContainerState_CONTAINER_CREATED {
				t.Fatalf("after the lost create: %v; want one created container", list)
			}
			// The caller finds the instance it does not know and starts it;
			// that answer is lost too, but the container runs.
			if err := rt.StartContainer(ctx, list[0].Id); !errors.Is(err, runtime.ErrUnavailable) {
				t.Fatalf("start = %v; want the answer lost", err)
			}
			st, err := rt.ContainerStatus(ctx, list[0].Id, false)
			if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Fatalf("status after the lost start = %v, %v", st.GetStatus(), err)
			}
			if id, err := rt.CreateContainer(ctx, sb, containerCfg("app2"), nil); err != nil || id == "" {
				t.Fatalf("second create = %q, %v; only one answer was to be lost", id, err)
			}
			// A call that fails is not counted: its error comes through.
			f.LoseAnswer("StopContainer", 1)
			if err := rt.StopContainer(ctx, "absent", 0); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("stop of an absent container = %v; want ErrNotFound", err)
			}
			if err := rt.StopContainer(ctx, list[0].Id, 0); !errors.Is(err, runtime.ErrUnavailable) {
				t.Fatalf("stop = %v; want the answer lost", err)
			}
			if got := f.CallCount("CreateContainer"); got != 2 {
				t.Fatalf("CallCount(CreateContainer) = %d, want 2", got)
			}
		})
	}
}

// TestInterceptAnswer: an answer interceptor replaces responses and
// errors, interceptors chain in order, and removing one ends it.
func TestInterceptAnswer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := fake.New(fake.WithImages("busybox:1.35"))
			rt := tr.dial(t, f)
			ctx := context.Background()
			sb := sandbox(t, f, "p", false)
			id, err := f.CreateContainer(ctx, sb, containerCfg("app"), nil)
			if err != nil {
				t.Fatal(err)
			}
			// A status that says the container was OOM-killed while the
			// fake still has it created.
			remove := f.InterceptAnswer(func(_ context.Context, method string, req, resp proto.Message, err error) (proto.Message, error) {
				if method != "ContainerStatus" || err != nil {
					return resp, err
				}
				if req.(*runtimeapi.ContainerStatusRequest).ContainerId != id {
					t.Errorf("request %v", req)
				}
				r := proto.Clone(resp).(*runtimeapi.ContainerStatusResponse)
				r.Status.State, r.Status.ExitCode, r.Status.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, 137, "OOMKilled"
				return r, nil
			})
			// A second interceptor sees the first one's answer.
			var seen runtimeapi.ContainerState
			f.InterceptAnswer(func(_ context.Context, method string, _, resp proto.Message, err error) (proto.Message, error) {
				if r, ok := resp.(*runtimeapi.ContainerStatusResponse); ok {
					seen = r.Status.State
				}
				return resp, err
			})
			st, err := rt.ContainerStatus(ctx, id, false)
			if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.ExitCode != 137 || st.Status.Reason != "OOMKilled" {
				t.Fatalf("changed status = %v, %v", st.GetStatus(), err)
			}
			if seen != runtimeapi.ContainerState_CONTAINER_EXITED {
				t.Errorf("the second interceptor saw %v", seen)
			}
			remove()
			if st, _ := rt.ContainerStatus(ctx, id, false); st.Status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
				t.Fatalf("after remove: %v", st.Status.State)
			}

			// An error made into a success, and a success into an error,
			// which comes back classified.
			remove = f.InterceptAnswer(func(_ context.Context, method string, _, resp proto.Message, err error) (proto.Message, error) {
				switch {
				case method == "PodSandboxStatus" && err != nil:
					return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: "ghost"}}, nil
				case method == "ListContainers":
					return nil, status.Error(codes.NotFound, "gone")
				}
				return resp, err
			})
			defer remove()
			if st, err := rt.PodSandboxStatus(ctx, "ghost", false); err != nil || st.GetStatus().GetId() != "ghost" {
				t.Fatalf("PodSandboxStatus(ghost) = %v, %v", st, err)
			}
			var ce *runtime.Error
			if _, err := rt.ListContainers(ctx, nil); !errors.Is(err, runtime.ErrNotFound) || !errors.As(err, &ce) {
				t.Fatalf("ListContainers = %v; want a classified ErrNotFound", err)
			}
		})
	}
}

// TestAnsweringKeepsAbilities: the Answering wrapper still reports pull
// progress and streams container events when the runtime it wraps does.
func TestAnsweringKeepsAbilities(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox:1.35"), fake.WithPullProgress(3, 0))
	identity := func(_ context.Context, _ string, _, resp proto.Message, err error) (proto.Message, error) {
		return resp, err
	}
	rt := fake.Answering(f, identity)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pp, ok := rt.(runtime.ProgressPuller)
	if !ok {
		t.Fatal("Answering hides PullImageWithProgress")
	}
	var reports int
	if _, err := pp.PullImageWithProgress(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil, func(runtime.PullProgress) { reports++ }); err != nil || reports != 3 {
		t.Fatalf("PullImageWithProgress: %d reports, %v", reports, err)
	}

	es, ok := rt.(runtime.ContainerEventStreamer)
	if !ok {
		t.Fatal("Answering hides StreamContainerEvents")
	}
	events := make(chan runtimeapi.ContainerEventType, 1)
	done := make(chan error, 1)
	go func() {
		done <- es.StreamContainerEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) { events <- ev.ContainerEventType })
	}()
	for f.EventWatchers() == 0 {
		runtimeGosched()
	}
	if _, err := rt.CreateContainer(ctx, sandbox(t, f, "p", false), containerCfg("app"), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-events; got != runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
		t.Fatalf("event %v", got)
	}
	cancel()
	<-done

	// A runtime without the stream answers Unimplemented, as over the wire.
	type plain struct{ runtime.Runtime }
	err := fake.Answering(plain{f}, identity).(runtime.ContainerEventStreamer).StreamContainerEvents(context.Background(), nil)
	if !errors.Is(err, runtime.ErrUnimplemented) {
		t.Fatalf("events of a runtime without them: %v", err)
	}
}
