package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// Interceptor runs before every call, after the call is recorded and
// outside the runtime's lock. A non-nil error fails the call with that
// error (classified, as every error of the fake). It may block; it should
// then honour ctx, as a real runtime's server does.
type Interceptor func(ctx context.Context, method string, req proto.Message) error

type interceptor struct{ fn Interceptor }

// Methods lists the CRI methods the fake serves, by their CRI names; the
// scripting helpers accept exactly these.
var Methods = []string{
	"PullImage", "ImageStatus", "ListImages", "RemoveImage",
	"Version", "Status",
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers", "ContainerStatus", "ExecSync",
	"ImageFsInfo", "ReopenContainerLog", "ListContainerStats", "ListPodSandboxStats",
	"UpdateContainerResources", "ContainerStats", "PodSandboxStats", "RuntimeConfig", "UpdateRuntimeConfig",
}

func checkMethod(method string) {
	for _, m := range Methods {
		if m == method {
			return
		}
	}
	panic(fmt.Sprintf("fake: unknown CRI method %q", method))
}

// Intercept adds an interceptor and returns a function that removes it.
func (r *Runtime) Intercept(f Interceptor) (remove func()) {
	ic := &interceptor{fn: f}
	r.mu.Lock()
	r.interceptors = append(r.interceptors, ic)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, x := range r.interceptors {
			if x == ic {
				r.interceptors = append(r.interceptors[:i:i], r.interceptors[i+1:]...)
				return
			}
		}
	}
}

// FailNext makes the next n calls of method fail with err.
func (r *Runtime) FailNext(method string, n int, err error) {
	checkMethod(method)
	var mu sync.Mutex
	left := n
	r.Intercept(func(_ context.Context, m string, _ proto.Message) error {
		if m != method {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if left <= 0 {
			return nil
		}
		left--
		return err
	})
}

// Fail makes every call of method fail with err until the returned
// function is called.
func (r *Runtime) Fail(method string, err error) (stop func()) {
	checkMethod(method)
	return r.Intercept(func(_ context.Context, m string, _ proto.Message) error {
		if m == method {
			return err
		}
		return nil
	})
}

// SetLatency makes every call of method take d on the runtime's clock (or
// end early with the context's error) until the returned function is called.
func (r *Runtime) SetLatency(method string, d time.Duration) (stop func()) {
	checkMethod(method)
	return r.Intercept(func(ctx context.Context, m string, _ proto.Message) error {
		if m != method {
			return nil
		}
		t := r.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// Hang makes calls of method block until their context ends, as a wedged
// runtime does. entered receives one value per call that starts hanging,
// so a test can act while the call is in flight without sleeping; release
// stops new calls from hanging.
func (r *Runtime) Hang(method string) (entered <-chan string, release func()) {
	checkMethod(method)
	ch := make(chan string, 64)
	remove := r.Intercept(func(ctx context.Context, m string, _ proto.Message) error {
		if m != method {
			return nil
		}
		select {
		case ch <- m:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	})
	return ch, remove
}
