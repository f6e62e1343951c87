package fake

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

var _ runtime.ContainerEventStreamer = (*Runtime)(nil)

// StreamContainerEvents implements runtime.ContainerEventStreamer, as
// containerd's GetContainerEvents: an event when a container is created,
// started, stops (exits) or is deleted, until ctx ends. A consumer that
// falls 256 events behind loses the newer ones, as a stream that cannot
// keep up; it should relist.
func (r *Runtime) StreamContainerEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error {
	ch := make(chan *runtimeapi.ContainerEventResponse, 256)
	r.mu.Lock()
	if r.watchers == nil {
		r.watchers = map[int]chan *runtimeapi.ContainerEventResponse{}
	}
	r.nextWatcher++
	id := r.nextWatcher
	r.watchers[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.watchers, id)
		r.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-ch:
			onEvent(ev)
		}
	}
}

// emit tells the watchers of a container's event. Callers hold mu.
func (r *Runtime) emit(c *container, typ runtimeapi.ContainerEventType) {
	if len(r.watchers) == 0 {
		return
	}
	var sb *runtimeapi.PodSandboxStatus
	if s, ok := r.sandboxes[c.sandboxID]; ok {
		sb = &runtimeapi.PodSandboxStatus{Id: s.id, Metadata: clone(s.config.GetMetadata()), State: s.state, CreatedAt: s.createdAt}
	}
	ev := &runtimeapi.ContainerEventResponse{ContainerId: c.id, ContainerEventType: typ, CreatedAt: r.now(), PodSandboxStatus: sb}
	for _, ch := range r.watchers {
		select {
		case ch <- clone(ev):
			r.eventsSent++
		default:
		}
	}
}

// EventsSent is how many events were put in the watchers' streams (an
// event counts once per watcher; one lost to a full stream does not), so
// a test can wait until its subscriber has handled them all.
func (r *Runtime) EventsSent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.eventsSent
}

// EventWatchers is how many StreamContainerEvents calls are listening, so
// a test can act once its subscriber is in place.
func (r *Runtime) EventWatchers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watchers)
}
