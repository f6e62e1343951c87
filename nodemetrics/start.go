package nodemetrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

type contextT = context.Context

// startState is kubelet's pod startup latency tracker's record of a pod.
type startState struct {
	pullStarts      []time.Time
	pulls           [][2]time.Time
	initRuntime     time.Duration
	observedRunning time.Time
	recorded        bool
}

// Seen notes the first time the node saw pod (kubelet's
// kubernetes.io/config.seen): call it where the agent hands the pod to
// its worker, before the worker may sync it. kubelet_pod_start_duration_seconds
// runs from then to the pod's first Running status; a pod that ends
// otherwise is forgotten when it is removed or watched terminal.
func (m *Metrics) Seen(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.seen[uid]; !ok {
		m.seen[uid] = m.clock.Now()
	}
}

// OnSync is podworker.WithOnSync's listener: the pods and containers
// started by the sync (kubelet_started_pods_total and
// kubelet_started_containers_total with their errors, from the sync's
// results: a container in CrashLoopBackOff is not counted, as kubelet
// checks its back-off first), the first Running status
// (kubelet_pod_start_duration_seconds, after Seen), and the start
// tracker's "all containers started" moment.
func (m *Metrics) OnSync(uid types.UID, s podworker.PodState) {
	for _, r := range s.Result.Results {
		switch r.Action {
		case podsync.ActionCreatePodSandbox:
			m.startedPods.Inc()
			if r.Err != nil {
				m.startedPodsErrors.Inc()
			}
		case podsync.ActionStartContainer:
			if r.Err != nil && errors.Is(r.Err, podsync.ErrCrashLoopBackOff) {
				continue
			}
			t := containerType(s.Pod, r.Target)
			m.startedContainers.WithLabelValues(t).Inc()
			if r.Err != nil {
				m.startedContainersErrors.WithLabelValues(t, r.Err.Error()).Inc()
			}
		}
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.Removed {
		delete(m.seen, uid)
		delete(m.starts, uid)
		delete(m.excluded, uid)
		return
	}
	if first, ok := m.seen[uid]; ok && !first.IsZero() && s.APIStatus.Phase == corev1.PodRunning {
		m.podStart.Observe(now.Sub(first).Seconds())
		m.seen[uid] = time.Time{} // observed: kept (zero) until the pod goes
	}
	st := m.starts[uid]
	if st == nil || st.recorded || !st.observedRunning.IsZero() {
		return
	}
	st.initRuntime = initRuntime(s.Pod, &s.APIStatus)
	if allStarted(&s.APIStatus) {
		st.observedRunning = now
	}
}

// ObservedPodOnWatch is kubelet's tracker's: call it with each pod the
// agent's watch delivers. A pod seen without a start time is tracked
// (unless unschedulable); once its containers are all started (OnSync)
// and a watched status shows it, the time since its creation is
// kubelet_pod_start_total_duration_seconds and, less image pulls and init
// containers' run time, kubelet_pod_start_sli_duration_seconds (not for
// pods with volumes other than Secret, ConfigMap, downward API, emptyDir
// and projected).
func (m *Metrics) ObservedPodOnWatch(pod *corev1.Pod) {
	when := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		delete(m.starts, pod.UID)
		delete(m.seen, pod.UID) // never Running (a rejected pod): forgotten
		return
	}
	st := m.starts[pod.UID]
	if st == nil {
		if m.excluded[pod.UID] {
			return
		}
		if pod.Status.StartTime.IsZero() {
			if unschedulable(pod) {
				m.excluded[pod.UID] = true
				return
			}
			m.starts[pod.UID] = &startState{}
		}
		return
	}
	if unschedulable(pod) {
		delete(m.starts, pod.UID)
		m.excluded[pod.UID] = true
		return
	}
	if st.observedRunning.IsZero() || st.recorded || !allStarted(&pod.Status) {
		return
	}
	total := when.Sub(pod.CreationTimestamp.Time)
	sli := total - pullTime(st.pulls) - st.initRuntime
	m.podStartTotal.Observe(total.Seconds())
	if !stateful(pod) {
		m.podStartSLI.Observe(sli.Seconds())
		if !pod.Spec.HostNetwork && !m.firstNetPod {
			m.firstNetworkPod.WithLabelValues().Set(sli.Seconds())
			m.firstNetPod = true
		}
	}
	st.recorded = true
}

// EventRecorder is client-go's record.EventRecorder's Eventf.
type EventRecorder = images.EventRecorder

// Recorder wraps the recorder given to podsync (podsync.WithRecorder) so
// the start tracker sees each pod's image pulls: from "Pulling" to
// "Successfully pulled", as kubelet's image manager reports them to its
// tracker. Every event still reaches next (nil: none).
func (m *Metrics) Recorder(next EventRecorder) EventRecorder { return pullRecorder{m, next} }

type pullRecorder struct {
	m    *Metrics
	next EventRecorder
}

func (r pullRecorder) Eventf(obj apiruntime.Object, eventtype, reason, format string, args ...interface{}) {
	if reason == images.EventPulling || reason == images.EventPulled {
		if uid := objectUID(obj); uid != "" {
			r.m.pullEvent(uid, reason == images.EventPulling, fmt.Sprintf(format, args...))
		}
	}
	if r.next != nil {
		r.next.Eventf(obj, eventtype, reason, format, args...)
	}
}

func (m *Metrics) pullEvent(uid types.UID, started bool, msg string) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.starts[uid]
	if st == nil {
		return
	}
	if started {
		st.pullStarts = append(st.pullStarts, now)
		return
	}
	if strings.HasPrefix(msg, "Successfully pulled") && len(st.pullStarts) > 0 {
		st.pulls = append(st.pulls, [2]time.Time{st.pullStarts[0], now})
		st.pullStarts = st.pullStarts[1:]
	}
}

func objectUID(obj apiruntime.Object) types.UID {
	switch o := obj.(type) {
	case *corev1.ObjectReference:
		return o.UID
	case *corev1.Pod:
		return o.UID
	}
	return ""
}

// pullTime is the time covered by the pulls, overlaps counted once, in
// the order they finished (kubelet's calculateImagePullingTime).
func pullTime(pulls [][2]time.Time) time.Duration {
	var total time.Duration
	var end time.Time
	for i, p := range pulls {
		switch {
		case i == 0 || p[0].After(end):
			total += p[1].Sub(p[0])
			end = p[1]
		case p[1].After(end):
			total += p[1].Sub(end)
			end = p[1]
		}
	}
	return total
}

// initRuntime is how long the pod's init containers (not sidecars) ran,
// from their terminated states.
func initRuntime(pod *corev1.Pod, s *corev1.PodStatus) time.Duration {
	var d time.Duration
	for _, c := range s.InitContainerStatuses {
		if isSidecar(pod, c.Name) {
			continue
		}
		if t := c.State.Terminated; t != nil && !t.StartedAt.IsZero() && t.FinishedAt.After(t.StartedAt.Time) {
			d += t.FinishedAt.Sub(t.StartedAt.Time)
		}
	}
	return d
}

func isSidecar(pod *corev1.Pod, name string) bool {
	if pod == nil {
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// allStarted is kubelet's hasPodStartedSLO.
func allStarted(s *corev1.PodStatus) bool {
	for _, cs := range s.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// stateful is kubelet's isStatefulPod.
func stateful(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil && v.ConfigMap == nil && v.DownwardAPI == nil && v.EmptyDir == nil && v.Projected == nil {
			return true
		}
	}
	return false
}
