package probes

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
)

// maxProbeRetries is kubelet's: a probe that errors (rather than fails) is
// run again at once, up to this many runs in all.
const maxProbeRetries = 3

// restartGrace is kubelet's kubeletRestartGracePeriod: a container running
// since this long before the Manager was made was found running, not
// started under it.
const restartGrace = 10 * time.Second

// worker is kubelet's probe worker for one container and kind.
type worker struct {
	m         *Manager
	key       key
	container corev1.Container
	spec      *corev1.Probe
	initial   podsync.ProbeResult
	ctx       context.Context    // ends when the worker is stopped or the Manager closed
	cancel    context.CancelFunc // stops the worker
	trigger   chan struct{}      // a probe now, out of period (capacity 1)
	command   []string           // an exec probe's command, expanded once (spec and env are fixed)

	// Guarded by m.mu.
	pod      *corev1.Pod
	status   corev1.PodStatus
	seen     bool
	resultID string // the container ID the worker's result is stored under

	// Only the worker's goroutine touches these.
	containerID string
	onHold      bool
	lastResult  podsync.ProbeResult
	resultRun   int
}

func newWorker(m *Manager, k key, c corev1.Container, spec *corev1.Probe) *worker {
	w := &worker{m: m, key: k, container: c, spec: spec, trigger: make(chan struct{}, 1)}
	w.ctx, w.cancel = context.WithCancel(m.ctx)
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

// update gives the worker the newest status (m.mu held). As kubelet's
// UpdatePodStatus, a readiness worker whose container runs but is not yet
// ready is triggered at once rather than at its next period.
func (w *worker) update(pod *corev1.Pod, status corev1.PodStatus) {
	w.pod, w.status, w.seen = pod, status, true
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

func (w *worker) run() {
	defer w.m.wg.Done()
	period := time.Duration(max(w.spec.PeriodSeconds, 1)) * time.Second
	t := w.m.clock.NewTicker(period)
	defer func() { t.Stop() }()
	defer w.m.exited(w)
	if len(w.m.onProbe) > 0 {
		defer w.report(podsync.ProbeUnknown, 0, true)
	}
	for w.doProbe() {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C():
		case <-w.trigger:
			// As kubelet: the period starts again from a triggered probe.
			t.Stop()
			t = w.m.clock.NewTicker(period)
		}
	}
}

// doProbe is kubelet's worker.doProbe: it probes once and records the
// result; false stops the worker.
func (w *worker) doProbe() bool {
	start := w.m.clock.Now()
	w.m.mu.Lock()
	pod, status, seen := w.pod, w.status, w.seen
	w.m.mu.Unlock()
	if !seen {
		return true // no status yet
	}
	if status.Phase == corev1.PodFailed || status.Phase == corev1.PodSucceeded {
		return false
	}
	c := findStatus(status.ContainerStatuses, w.container.Name)
	if c == nil || c.ContainerID == "" {
		c = findStatus(status.InitContainerStatuses, w.container.Name)
		if c == nil || c.ContainerID == "" {
			return true // wait for more information
		}
	}
	restartableInit := w.isRestartableInit(pod)
	id := rawID(c.ContainerID)
	if id != w.containerID {
		if w.containerID != "" {
			w.m.remove(w, w.containerID)
		}
		w.containerID = id
		// As kubelet with ChangeContainerStatusOnKubeletRestart off (the
		// default since v1.35): a container found running since before
		// the Manager was made keeps its results until probed, so a ready
		// container does not flip to unready because the agent restarted.
		found := c.State.Running != nil && !c.State.Running.StartedAt.IsZero() &&
			c.State.Running.StartedAt.Time.Before(w.m.start.Add(-restartGrace))
		if found && restartableInit && w.key.kind == Startup && c.Started != nil && *c.Started {
			w.m.set(w, id, podsync.ProbeSuccess)
		}
		if !found {
			w.m.set(w, id, w.initial)
		}
		w.onHold = false // a new container: probe again
	}
	if w.onHold {
		return true
	}
	if c.State.Running == nil {
		w.m.set(w, id, podsync.ProbeFailure)
		if c.State.Terminated == nil {
			return true
		}
		return podsync.ContainerShouldRestart(&w.container, &pod.Spec, c.State.Terminated.ExitCode) ||
			allContainersRestarting(pod, &status)
	}
	if pod.DeletionTimestamp != nil && (w.key.kind == Liveness || w.key.kind == Startup) {
		w.m.set(w, id, podsync.ProbeSuccess) // a quiet shutdown
		return false
	}
	if int32(w.m.clock.Since(c.State.Running.StartedAt.Time).Seconds()) < w.spec.InitialDelaySeconds {
		return true
	}
	if c.Started != nil && *c.Started {
		if w.key.kind == Startup {
			return true // started: the startup probe's work is done
		}
	} else if w.key.kind != Startup {
		return true // liveness and readiness wait for the start
	}

	result, err := w.probe(pod, status)
	if err != nil {
		return true // as kubelet: an error is no result at all
	}
	w.report(result, w.m.clock.Since(start), false)
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if result == podsync.ProbeFailure && w.resultRun < int(w.spec.FailureThreshold) ||
		result == podsync.ProbeSuccess && w.resultRun < int(w.spec.SuccessThreshold) {
		return true
	}
	w.m.set(w, id, result)
	if w.key.kind == Liveness && result == podsync.ProbeFailure || w.key.kind == Startup {
		// The container will be restarted (or has started): hold until a
		// new container, and give that one the full thresholds.
		w.onHold, w.resultRun = true, 0
	}
	return true
}

// report tells the WithOnProbe listeners of a probe's result, or that the
// worker stopped.
func (w *worker) report(result podsync.ProbeResult, took time.Duration, stopped bool) {
	if len(w.m.onProbe) == 0 {
		return
	}
	w.m.mu.Lock()
	pod := w.pod
	w.m.mu.Unlock()
	r := ProbeRun{Kind: w.key.kind, PodUID: w.key.uid, Container: w.container.Name, Result: result, Duration: took, Stopped: stopped}
	if pod != nil {
		r.Namespace, r.Pod = pod.Namespace, pod.Name
	}
	for _, f := range w.m.onProbe {
		f(r)
	}
}

func (w *worker) isRestartableInit(pod *corev1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == w.container.Name {
			return podsync.IsRestartableInitContainer(&w.container)
		}
	}
	return false
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// allContainersRestarting is kubelet's ShouldAllContainersRestart on the
// API status: the pod says so, or a container exited with a code whose
// rule restarts all containers.
func allContainersRestarting(pod *corev1.Pod, status *corev1.PodStatus) bool {
	for _, cond := range status.Conditions {
		if cond.Type == corev1.AllContainersRestarting && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	check := func(specs []corev1.Container) bool {
		for i := range specs {
			s := findStatus(status.InitContainerStatuses, specs[i].Name)
			if s == nil {
				s = findStatus(status.ContainerStatuses, specs[i].Name)
			}
			if s == nil || s.State.Terminated == nil {
				continue
			}
			if rule, ok := matchingRule(&specs[i], s.State.Terminated.ExitCode); ok && rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
				return true
			}
		}
		return false
	}
	return check(pod.Spec.InitContainers) || check(pod.Spec.Containers)
}

// matchingRule is kubelet's FindMatchingContainerRestartRule: the first
// rule whose exit codes match.
func matchingRule(c *corev1.Container, code int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range rule.ExitCodes.Values {
			in = in || v == code
		}
		switch rule.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}

// probe is kubelet's prober.probe: the handler is run up to
// maxProbeRetries times while it errors; its outcome is reported as
// kubelet reports it (Unhealthy, ProbeWarning events). A non-nil error
// means no result.
func (w *worker) probe(pod *corev1.Pod, status corev1.PodStatus) (podsync.ProbeResult, error) {
	var (
		out outcome
		err error
	)
	for i := 0; i < maxProbeRetries; i++ {
		out, err = w.run1(pod, status.PodIP)
		if err == nil {
			break
		}
	}
	ref := func() apiruntime.Object { return images.ContainerRef(pod, &w.container) } // only for an event
	if err != nil {
		if w.ctx.Err() != nil {
			return podsync.ProbeUnknown, err // stopped: nothing to report
		}
		w.m.log.V(1).Info("Probe errored", "probeType", w.key.kind, "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "containerName", w.container.Name, "probeResult", out.result, "err", err)
		w.m.recorder.Eventf(ref(), corev1.EventTypeWarning, "Unhealthy", "%s probe errored and resulted in %s state: %s", w.key.kind, out.result, err)
		return podsync.ProbeFailure, err
	}
	switch out.result {
	case resultSuccess:
		return podsync.ProbeSuccess, nil
	case resultWarning:
		w.m.recorder.Eventf(ref(), corev1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", w.key.kind, out.output)
		return podsync.ProbeSuccess, nil
	case resultFailure:
		w.m.log.V(1).Info("Probe failed", "probeType", w.key.kind, "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "containerName", w.container.Name, "output", out.output)
		w.m.recorder.Eventf(ref(), corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", w.key.kind, out.output)
		return podsync.ProbeFailure, nil
	}
	return podsync.ProbeFailure, nil // unknown without an error, as kubelet
}
