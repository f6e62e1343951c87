package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/runtime"
)

// EffectiveGracePeriod is the grace period kubelet's pod worker gives a
// terminating pod (calculateEffectiveGracePeriod): the deletion's grace
// when set, else a caller's override (an eviction's), the smaller of the
// two when both are, else the pod's terminationGracePeriodSeconds; never
// less than 1 s.
func EffectiveGracePeriod(pod *corev1.Pod, override *int64) int64 {
	var g int64
	set := false
	for _, o := range []*int64{pod.DeletionGracePeriodSeconds, override} {
		if o != nil && (!set || *o < g) {
			g, set = *o, true
		}
	}
	if !set && pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(g, 1)
}

// KillPod stops the pod as kubelet's killPodWithSyncResult does: every
// running (or unknown) container at once, each with its pre-stop hook
// inside its grace period; sidecars (restartable init containers) only
// after every app container has stopped, the last-declared first; then
// every sandbox. gracePeriodOverride, when set, replaces each container's
// grace period (kubelet passes EffectiveGracePeriod for a deleted pod);
// otherwise a container gets kubelet's setTerminationGracePeriod. A pod
// whose spec is gone may be passed as nil: the containers' annotations
// restore grace periods and pre-stop hooks, as kubelet does after a
// restart. Containers and sandboxes stay on the runtime for
// GarbageCollect or RemovePod.
func (s *Syncer) KillPod(ctx context.Context, pod *corev1.Pod, status *PodStatus, gracePeriodOverride *int64) Result {
	var result Result
	if status == nil {
		return result
	}
	name := podName(podOrStub(pod, status))
	var running []*ContainerStatus
	for _, cs := range status.ContainerStatuses {
		if cs.State == ContainerStateRunning || cs.State == ContainerStateUnknown {
			running = append(running, cs)
		}
	}
	var toStop []string
	for _, sb := range status.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY || !s.stopped.has(sb.Id) {
			toStop = append(toStop, sb.Id)
		}
	}
	if len(running) == 0 && len(toStop) == 0 {
		// Killed already: nothing runs, and every sandbox was stopped by
		// this Syncer. Kubelet's pod worker stops syncing a finished pod;
		// podstart's callers may sync it again, and a kill that did
		// nothing reports nothing, so the pod counts as settled.
		return result
	}
	var order *terminationOrder
	if pod != nil && hasSidecar(pod) {
		names := make([]string, 0, len(running))
		for _, cs := range running {
			names = append(names, cs.Name)
		}
		order = newTerminationOrder(pod, names)
	}
	_ = s.traced("kill-pod", "", func() error {
		results := make([]*SyncResult, len(running))
		var wg sync.WaitGroup
		for i, cs := range running {
			results[i] = &SyncResult{Action: ActionKillContainer, Target: cs.Name}
			wg.Add(1)
			go func(sr *SyncResult, cs *ContainerStatus) {
				defer wg.Done()
				t0 := s.o.clock.Now()
				p, c := pod, containerSpec(pod, cs.Name)
				if p == nil || c == nil {
					p, c = restoreSpecs(status, cs)
				}
				if err := s.stopContainer(ctx, p, c, cs.ID, "", KillReasonUnknown, gracePeriodOverride, order); err != nil {
					sr.Err, sr.Message = stepError(ErrKillContainer, err), err.Error()
				}
				sr.Duration = s.o.clock.Since(t0)
			}(results[i], cs)
		}
		wg.Wait()
		result.Results = append(result.Results, results...)
		if len(toStop) > 0 {
			sr := result.add(ActionKillPodSandbox, name)
			t0 := s.o.clock.Now()
			for _, id := range toStop {
				if err := runtime.Classify(s.rt.StopPodSandbox(ctx, id)); err != nil && !errors.Is(err, runtime.ErrNotFound) {
					sr.Err, sr.Message = stepError(ErrKillPodSandbox, err), err.Error()
				} else {
					s.stopped.add(id)
				}
			}
			sr.Duration = s.o.clock.Since(t0)
		}
		return result.Error()
	})
	return result
}

// killContainer stops one container for the reason given, with its own
// grace period.
func (s *Syncer) killContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, message string, reason KillReason) error {
	return s.stopContainer(ctx, pod, c, id, message, reason, nil, nil)
}

// stopContainer is kubelet's killContainer: the Killing event, the
// pre-stop hook within the grace period, the sidecar's turn, then
// StopContainer with what is left (at least 2 s). NotFound counts as done.
func (s *Syncer) stopContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, message string, reason KillReason, override *int64, order *terminationOrder) error {
	return s.traced("kill", c.Name, func() error {
		grace := gracePeriod(pod, c, reason)
		if message == "" {
			message = fmt.Sprintf("Stopping container %s", c.Name)
		}
		ref := images.ContainerRef(pod, c)
		s.o.recorder.Eventf(ref, corev1.EventTypeNormal, "Killing", "%s", message)
		if override != nil {
			grace = *override
		}
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
			grace -= s.preStop(ctx, pod, c, id, grace)
		}
		if order != nil && grace > 0 {
			grace -= order.waitForTurn(ctx, s, c.Name, grace)
		}
		grace = max(grace, minGracePeriod)
		err := runtime.Classify(s.rt.StopContainer(ctx, id, grace))
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return err
		}
		if order != nil {
			order.terminated(c.Name)
		}
		return nil
	})
}

// preStop runs the pre-stop hook for at most grace seconds and returns the
// whole seconds it took. As kubelet, the failure event does not carry the
// hook's message, which may hold secrets from its command line.
func (s *Syncer) preStop(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, grace int64) int64 {
	start := s.o.clock.Now()
	hctx, cancel := context.WithCancel(ctx)
	defer cancel() // a hook still running when the grace is up is abandoned
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msg, err := s.runHook(hctx, pod, c, id, c.Lifecycle.PreStop, ""); err != nil && hctx.Err() == nil {
			logFromContext(ctx).V(1).Info("PreStop hook failed", "container", c.Name, "err", err, "message", msg)
			s.o.recorder.Eventf(images.ContainerRef(pod, c), corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
		}
	}()
	t := s.o.clock.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		logFromContext(ctx).V(2).Info("PreStop hook not completed in grace period", "container", c.Name, "gracePeriod", grace)
	case <-ctx.Done():
	}
	return int64(s.o.clock.Since(start).Seconds())
}

// terminationOrder is kubelet's terminationOrdering: a sidecar waits for
// every app container, and for each sidecar declared after it.
type terminationOrder struct {
	mu      sync.Mutex
	done    map[string]chan struct{}
	prereqs map[string][]chan struct{}
}

func newTerminationOrder(pod *corev1.Pod, running []string) *terminationOrder {
	o := &terminationOrder{done: map[string]chan struct{}{}, prereqs: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, n := range running {
		isRunning[n] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !isRunning[name] {
			close(ch)
		}
		o.done[name] = ch
		return ch
	}
	var apps []chan struct{}
	for _, c := range pod.Spec.Containers {
		apps = append(apps, channel(c.Name))
	}
	previous := ""
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		ic := &pod.Spec.InitContainers[i]
		channel(ic.Name)
		if IsRestartableInitContainer(ic) {
			o.prereqs[ic.Name] = append(o.prereqs[ic.Name], apps...)
			if previous != "" {
				o.prereqs[ic.Name] = append(o.prereqs[ic.Name], o.done[previous])
			}
			previous = ic.Name
		}
	}
	return o
}

// waitForTurn blocks until name's prerequisites stopped or grace seconds
// passed, and returns the whole seconds it waited.
func (o *terminationOrder) waitForTurn(ctx context.Context, s *Syncer, name string, grace int64) int64 {
	start := s.o.clock.Now()
	t := s.o.clock.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	for _, ch := range o.prereqs[name] {
		select {
		case <-ch:
		case <-t.C():
			return int64(s.o.clock.Since(start).Seconds())
		case <-ctx.Done():
			return int64(s.o.clock.Since(start).Seconds())
		}
	}
	return int64(s.o.clock.Since(start).Seconds())
}

func (o *terminationOrder) terminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.done[name]; ok {
		close(ch)
		delete(o.done, name)
	}
}

func hasSidecar(pod *corev1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// containerSpec finds a container of any kind by name.
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	return nil
}

// podOrStub returns pod, or a pod with only the status's coordinates.
func podOrStub(pod *corev1.Pod, status *PodStatus) *corev1.Pod {
	if pod != nil {
		return pod
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: status.Name, Namespace: status.Namespace, UID: status.UID}}
}

// restoreSpecs is kubelet's restoreSpecsFromContainerLabels: the grace
// periods and the pre-stop hook SyncPod wrote into the container's
// annotations, for a container whose pod spec is gone.
func restoreSpecs(status *PodStatus, cs *ContainerStatus) (*corev1.Pod, *corev1.Container) {
	pod := podOrStub(nil, status)
	pod = pod.DeepCopy()
	c := &corev1.Container{Name: cs.Name}
	a := cs.Annotations
	if v, err := strconv.ParseInt(a[AnnotationPodDeletionGracePeriod], 10, 64); err == nil {
		pod.DeletionGracePeriodSeconds = &v
	}
	if v, err := strconv.ParseInt(a[AnnotationPodTerminationGracePeriod], 10, 64); err == nil {
		pod.Spec.TerminationGracePeriodSeconds = &v
	}
	if h := a[AnnotationContainerPreStopHandler]; h != "" {
		var handler corev1.LifecycleHandler
		if json.Unmarshal([]byte(h), &handler) == nil {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &handler}
		}
	}
	return pod, c
}

func logFromContext(ctx context.Context) logr.Logger { return logr.FromContextOrDiscard(ctx) }

// stoppedSandboxes are the sandboxes a Syncer stopped, so a finished pod
// synced again is not stopped again (sandbox IDs are never reused). A
// sandbox the runtime shows ready again is stopped again. Bounded: past
// maxStopped IDs the set starts again empty, which costs one repeated
// StopPodSandbox per sandbox at most.
type stoppedSandboxes struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

const maxStopped = 4096

func (st *stoppedSandboxes) has(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.ids[id]
	return ok
}

func (st *stoppedSandboxes) add(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ids == nil || len(st.ids) >= maxStopped {
		st.ids = map[string]struct{}{}
	}
	st.ids[id] = struct{}{}
}

func (st *stoppedSandboxes) forget(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.ids, id)
}
