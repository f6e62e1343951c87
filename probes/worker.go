package probes

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
)

// worker is kubelet's probe worker for one container and kind.
type worker struct {
	m         *Manager
	key       key
	container corev1.Container
	spec      *corev1.Probe
	init      bool
	initial   podsync.ProbeResult
	done      chan struct{}
	trigger   chan struct{} // a probe now, out of period (capacity 1)
	stopOnce  sync.Once

	mu     sync.Mutex
	pod    *corev1.Pod
	status corev1.PodStatus
	seen   bool

	// Only the worker's goroutine touches these.
	containerID string
	onHold      bool
	lastResult  podsync.ProbeResult
	resultRun   int
}

func newWorker(m *Manager, k key, c corev1.Container, spec *corev1.Probe, init bool) *worker {
	w := &worker{m: m, key: k, container: c, spec: spec, init: init, done: make(chan struct{}), trigger: make(chan struct{}, 1)}
	switch k.kind {
	case Readiness:
		w.initial = podsync.ProbeFailure
	case Liveness:
		w.initial = podsync.ProbeSuccess
	default:
		w.initial = podsync.ProbeUnknown
	}
	return w
}

// update gives the worker the newest status. As kubelet's
// UpdatePodStatus, a readiness worker whose container is not yet ready is
// triggered at once rather than at its next period.
func (w *worker) update(pod *corev1.Pod, status corev1.PodStatus) {
	w.mu.Lock()
	w.pod, w.status, w.seen = pod, status, true
	w.mu.Unlock()
	if w.key.kind != Readiness {
		return
	}
	for _, list := range [][]corev1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses} {
		for _, c := range list {
			if c.Name == w.container.Name && c.State.Running != nil && !c.Ready {
				select {
				case w.trigger <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (w *worker) stop() { w.stopOnce.Do(func() { close(w.done) }) }

func (w *worker) run() {
	defer w.m.wg.Done()
	period := time.Duration(max(w.spec.PeriodSeconds, 1)) * time.Second
	t := w.m.clock.NewTicker(period)
	defer t.Stop()
	defer func() {
		if w.containerID != "" {
			w.m.remove(w.key.kind, w.containerID)
		}
		w.m.mu.Lock()
		if w.m.workers[w.key] == w {
			delete(w.m.workers, w.key)
		}
		w.m.mu.Unlock()
	}()
	for w.doProbe() {
		select {
		case <-w.done:
			return
		case <-w.m.ctx.Done():
			return
		case <-t.C():
		case <-w.trigger:
		}
	}
}

// doProbe is kubelet's worker.doProbe; false stops the worker.
func (w *worker) doProbe() bool {
	w.mu.Lock()
	pod, status, seen := w.pod, w.status, w.seen
	w.mu.Unlock()
	if !seen {
		return true
	}
	if status.Phase == corev1.PodFailed || status.Phase == corev1.PodSucceeded {
		return false
	}
	list := status.ContainerStatuses
	if w.init {
		list = status.InitContainerStatuses
	}
	var c *corev1.ContainerStatus
	for i := range list {
		if list[i].Name == w.container.Name {
			c = &list[i]
		}
	}
	if c == nil || c.ContainerID == "" {
		return true // wait for more information
	}
	id := rawID(c.ContainerID)
	if id != w.containerID {
		if w.containerID != "" {
			w.m.remove(w.key.kind, w.containerID)
		}
		w.containerID = id
		w.m.set(w.key.kind, id, w.initial, pod.UID)
		w.onHold = false
	}
	if w.onHold {
		return true
	}
	if c.State.Running == nil {
		w.m.set(w.key.kind, id, podsync.ProbeFailure, pod.UID)
		if c.State.Terminated == nil {
			return true
		}
		return podsync.ContainerShouldRestart(&w.container, &pod.Spec, c.State.Terminated.ExitCode)
	}
	if pod.DeletionTimestamp != nil && (w.key.kind == Liveness || w.key.kind == Startup) {
		w.m.set(w.key.kind, id, podsync.ProbeSuccess, pod.UID)
		return false
	}
	if int32(w.m.clock.Since(c.State.Running.StartedAt.Time).Seconds()) < w.spec.InitialDelaySeconds {
		return true
	}
	if c.Started != nil && *c.Started {
		if w.key.kind == Startup {
			return true
		}
	} else if w.key.kind != Startup {
		return true
	}

	result := w.probe(pod, status, c)
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if result == podsync.ProbeFailure && w.resultRun < int(max(w.spec.FailureThreshold, 1)) ||
		result == podsync.ProbeSuccess && w.resultRun < int(max(w.spec.SuccessThreshold, 1)) {
		return true
	}
	w.m.set(w.key.kind, id, result, pod.UID)
	if w.key.kind == Liveness && result == podsync.ProbeFailure || w.key.kind == Startup {
		w.onHold, w.resultRun = true, 0
	}
	return true
}

// probe runs the handler once and reports it as kubelet's prober does.
func (w *worker) probe(pod *corev1.Pod, status corev1.PodStatus, c *corev1.ContainerStatus) podsync.ProbeResult {
	timeout := time.Duration(max(w.spec.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(w.m.ctx, timeout)
	defer cancel()
	out, err := run(ctx, w.m, w.spec, &w.container, status.PodIP, rawID(c.ContainerID), timeout)
	ref := images.ContainerRef(pod, &w.container)
	switch {
	case err != nil:
		w.m.recorder.Eventf(ref, corev1.EventTypeWarning, "Unhealthy", "%s probe errored and resulted in %s state: %s", w.key.kind, "failure", err)
		return podsync.ProbeFailure
	case out.result == resultWarning:
		w.m.recorder.Eventf(ref, corev1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", w.key.kind, out.output)
		return podsync.ProbeSuccess
	case out.result == resultFailure:
		w.m.recorder.Eventf(ref, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", w.key.kind, out.output)
		w.m.log.V(1).Info("Probe failed", "probe", w.key.kind, "pod", pod.Namespace+"/"+pod.Name, "container", w.container.Name, "output", out.output)
		return podsync.ProbeFailure
	}
	return podsync.ProbeSuccess
}
