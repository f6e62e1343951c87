// Package probes runs a pod's liveness, readiness and startup probes as
// kubelet v1.36's prober manager does, and keeps their results for
// podsync (restarts: podsync.ProbeResults) and apistatus (started and
// ready: apistatus.Probes).
//
// Manager.Update gives the Manager a pod and its newest API status
// (apistatus.PodStatus); the Manager keeps one worker per container and
// probe kind, each probing every periodSeconds on the Manager's clock:
//
//   - a new container ID resets the result to its initial value
//     (readiness Failure, liveness Success, startup Unknown);
//   - a container that is not running reads Failure; the worker stops
//     when the container terminated for good (ContainerShouldRestart);
//   - nothing runs before initialDelaySeconds; liveness and readiness wait
//     until the container started (its startup probe succeeded), the
//     startup probe stops then;
//   - a result changes only after failureThreshold failures or
//     successThreshold successes in a row; after a liveness failure or a
//     startup result the worker holds until the container is replaced;
//   - on a deleted pod, liveness and startup read Success and stop.
//
// Handlers: exec through the runtime's ExecSync with the probe's timeout
// (the command's $(VAR)s expanded from the container's literal env); HTTP
// GET with scheme, host (default the pod IP), path, port by number or
// name, the probe's headers, User-Agent kube-probe/1.36 and Accept */*,
// 2xx–3xx success, redirects followed only on the same host (another host
// is a warning and counts as success), 10 KiB of body read; TCP connect;
// gRPC health checking (grpc.health.v1), SERVING is success. Failures are
// reported as kubelet's Unhealthy events ("Liveness probe failed: …").
//
// WithOnChange is told when a result changes, so a pod worker syncs the
// pod (a liveness failure restarts its container; readiness flips the
// Ready condition).
//
// # Differences from kubelet
//
// Kubelet spreads a restarted kubelet's first probes over one period at
// random; here the first probe of a worker runs at once. Kubelet retries
// a probe that errors (not fails) up to three times; here an error counts
// as a failure, once.
package probes

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// Kind is a probe's kind.
type Kind string

// Probe kinds, as kubelet names them in events.
const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// EventRecorder is client-go's record.EventRecorder's Eventf.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Option configures a Manager.
type Option func(*Manager)

// WithClock sets the clock for periods, delays and timeouts' bookkeeping.
func WithClock(c clock.WithTicker) Option { return func(m *Manager) { m.clock = c } }

// WithRecorder sets where Unhealthy events go.
func WithRecorder(r EventRecorder) Option { return func(m *Manager) { m.recorder = r } }

// WithOnChange is called (from a worker goroutine) when a container's
// result changes.
func WithOnChange(f func(podUID types.UID)) Option {
	return func(m *Manager) { m.onChange = append(m.onChange, f) }
}

// WithHTTPClient sets the client for HTTP probes (default: no keep-alive,
// TLS without verification, redirects only on the same host, as kubelet).
func WithHTTPClient(c *http.Client) Option { return func(m *Manager) { m.http = c } }

// WithLogger sets the logger.
func WithLogger(l logr.Logger) Option { return func(m *Manager) { m.log = l } }

// Manager runs probe workers and holds their results. It is safe for
// concurrent use.
type Manager struct {
	rt       runtime.ContainerManager
	clock    clock.WithTicker
	recorder EventRecorder
	onChange []func(types.UID)
	http     *http.Client
	log      logr.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	workers map[key]*worker
	results map[Kind]map[string]podsync.ProbeResult // by container ID
	closed  bool
}

type key struct {
	uid       types.UID
	container string
	kind      Kind
}

// New returns a Manager that runs exec probes through rt.
func New(rt runtime.ContainerManager, opts ...Option) *Manager {
	m := &Manager{rt: rt, clock: clock.RealClock{}, recorder: nopRecorder{}, log: logr.Discard(),
		workers: map[key]*worker{}, results: map[Kind]map[string]podsync.ProbeResult{Liveness: {}, Readiness: {}, Startup: {}}}
	for _, o := range opts {
		o(m)
	}
	if m.http == nil {
		m.http = defaultHTTPClient()
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Close stops every worker and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Update gives the workers of a pod its spec and newest API status,
// starting a worker for each probe the spec has.
func (m *Manager) Update(pod *corev1.Pod, status corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	pod = pod.DeepCopy()
	ensure := func(c *corev1.Container, init bool) {
		for kind, spec := range map[Kind]*corev1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if spec == nil {
				continue
			}
			k := key{pod.UID, c.Name, kind}
			w := m.workers[k]
			if w != nil {
				w.update(pod, status)
				continue
			}
			w = newWorker(m, k, *c.DeepCopy(), spec.DeepCopy(), init)
			w.update(pod, status) // before its first probe
			m.workers[k] = w
			m.wg.Add(1)
			go w.run()
		}
	}
	for i := range pod.Spec.InitContainers {
		if podsync.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			ensure(&pod.Spec.InitContainers[i], true)
		}
	}
	for i := range pod.Spec.Containers {
		ensure(&pod.Spec.Containers[i], false)
	}
}

// AddListener adds a function called, like WithOnChange's, when a
// container's result changes (a pod worker wakes the pod).
func (m *Manager) AddListener(f func(podUID types.UID)) {
	m.mu.Lock()
	m.onChange = append(m.onChange[:len(m.onChange):len(m.onChange)], f)
	m.mu.Unlock()
}

// RemovePod stops a pod's workers and forgets their results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	var stop []*worker
	for k, w := range m.workers {
		if k.uid == uid {
			stop = append(stop, w)
			delete(m.workers, k)
		}
	}
	m.mu.Unlock()
	for _, w := range stop {
		w.stop()
	}
}

// Liveness implements podsync.ProbeResults.
func (m *Manager) Liveness(containerID string) (podsync.ProbeResult, bool) {
	return m.get(Liveness, containerID)
}

// Readiness implements apistatus.Probes.
func (m *Manager) Readiness(containerID string) (podsync.ProbeResult, bool) {
	return m.get(Readiness, containerID)
}

// Startup implements podsync.ProbeResults and apistatus.Probes.
func (m *Manager) Startup(containerID string) (podsync.ProbeResult, bool) {
	return m.get(Startup, containerID)
}

func (m *Manager) get(kind Kind, id string) (podsync.ProbeResult, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[kind][rawID(id)]
	return r, ok
}

func (m *Manager) set(kind Kind, id string, r podsync.ProbeResult, uid types.UID) {
	m.mu.Lock()
	prev, ok := m.results[kind][id]
	m.results[kind][id] = r
	m.mu.Unlock()
	if !ok || prev != r {
		m.mu.Lock()
		listeners := m.onChange
		m.mu.Unlock()
		for _, f := range listeners {
			f(uid)
		}
	}
}

func (m *Manager) remove(kind Kind, id string) {
	m.mu.Lock()
	delete(m.results[kind], id)
	m.mu.Unlock()
}

func rawID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}

type nopRecorder struct{}

func (nopRecorder) Eventf(apiruntime.Object, string, string, string, ...interface{}) {}
