// Package probes runs a pod's liveness, readiness and startup probes as
// kubelet v1.37.2's prober manager does (pkg/kubelet/prober, pkg/probe), and
// keeps their results for podsync (restarts: podsync.ProbeResults) and
// apistatus (started and ready: apistatus.Probes).
//
// Manager.Update gives the Manager a pod and its newest API status
// (apistatus.PodStatus); the Manager keeps one worker per container (and
// sidecar) and probe kind, each probing every periodSeconds on the
// Manager's clock, as kubelet's worker.doProbe:
//
//   - a new container ID resets the result to its initial value
//     (readiness Failure, liveness Success, startup Unknown), except for a
//     container found running since more than 10s before the Manager was
//     made (an agent restart, kubelet's ChangeContainerStatusOnKubeletRestart
//     off, the default since v1.35): it keeps no result until probed, and a
//     started sidecar's startup result reads Success;
//   - a container that is not running reads Failure; the worker stops
//     when the container terminated for good (kubelet's
//     ContainerShouldRestart with restart rules, or a restart of all
//     containers under way);
//   - nothing runs before initialDelaySeconds; liveness and readiness wait
//     until the container started, the startup probe stops then;
//   - a result changes only after failureThreshold failures or
//     successThreshold successes in a row; after a liveness failure or a
//     startup result the worker holds until the container is replaced, and
//     the new one gets the full thresholds;
//   - on a pod being deleted, liveness and startup read Success and stop;
//   - a readiness worker whose running container is not ready is probed
//     at once on Update, and its period starts again from there.
//
// A probe that errors (the runtime could not run the command, a port that
// does not resolve, no handler) is run again at once, three runs in all
// (kubelet's runProbeWithRetries); if it still errors, a Warning Unhealthy
// event says "<Kind> probe errored and resulted in unknown state: <err>"
// and, as kubelet, the probe gives no result: the result and the run of
// equal results stay as they were. A command that is not found in the
// container is such an error on containerd and CRI-O (kubernetes issue
// 106682), so a liveness probe with a missing command never restarts its
// container, and a readiness probe with one never makes it ready.
//
// Handlers, as pkg/probe: exec through the runtime's ExecSync with the
// probe's timeout, the command's $(VAR)s expanded from the container's env
// (literal values; a valueFrom variable expands to nothing), exit 0 success,
// another exit a failure with stdout and stderr (10 KiB at most), a
// timeout a failure ("command timed out: "<cmd>" timed out after 1s":
// ExecProbeTimeout is locked on since v1.35); the call is bounded by the
// runtime client's own timeout (runtime.WithCallTimeout plus the probe's),
// as kubelet's CRI client. HTTP GET with scheme, host (default the pod IP),
// path, port by number or by the name of one of the container's ports (a
// string port is only a name: "8080" names no port and the probe errors
// with "port \"8080\" not found", v1.37 having dropped the numeric
// fallback), the probe's headers (a Host header sets the request's host),
// User-Agent kube-probe/1.37 and Accept */* unless
// given (an empty Accept is dropped), no keep-alive, TLS unverified, no
// proxy, timeoutSeconds as the client's timeout; 2xx success, 3xx left
// unfollowed a ProbeWarning event and success, redirects followed only on
// the same host, other statuses a failure "HTTP probe failed with
// statuscode: N" (the body is not shown), 10 KiB of body read; an
// httpGet.protocol of HTTP2 (h2c) and a grpc.mode of TLS are ignored, as
// kubelet v1.37.2 ignores them with their alpha gates (H2CContainerProbe,
// GRPCContainerProbeTLS) at their default, off. TCP
// connect. gRPC health checking (grpc.health.v1): the connection is
// awaited until the timeout, SERVING is success. Connections linger one
// second at most (kubelet's ProbeDialer). Failures are Warning Unhealthy
// events ("Liveness probe failed: <output>").
//
// WithOnChange and AddListener are told when a result changes, so a pod
// worker syncs the pod (a liveness failure restarts its container;
// readiness flips the Ready condition).
//
// # Differences from kubelet
//
// A probe's timeoutSeconds that is 0 or less is taken as 1s, the API
// server's default, for every handler (exec, HTTP, TCP, gRPC), as
// periodSeconds below 1 is taken as 1s. Kubelet only sees defaulted pods
// and passes the value through; podstart takes pods nobody defaulted, and
// to each handler a zero timeout means none (net/http's Client.Timeout,
// a dialer's, ExecSync's), so an HTTP probe of a server that accepts and
// never answers would never return.
//
// Kubelet spreads a restarted kubelet's first probes over one period at
// random; here the first probe of a worker runs at once, so a fake clock
// decides every probe and tests need no real waiting.
//
// Kubelet makes a worker again at every sync (AddPod), and one whose
// container terminated for good stops again at once after setting its
// initial result. Here Update makes it again only for a new container
// instance: a podstart pod worker syncs when a result changes, and a
// worker made again would change a result, wake the pod and be made again
// without end. The results at rest are kubelet's.
//
// RemovePod forgets the pod's results before it returns, and a probe still
// running when it is called records nothing and sends no event; kubelet
// removes them when its workers have ended.
package probes

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

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

// ProbeRun is one probe of a container that produced a result, or the end
// of a container's probe worker (Stopped), as kubelet's prober metrics
// count them (prober_probe_total, prober_probe_duration_seconds).
type ProbeRun struct {
	Kind           Kind
	Namespace, Pod string
	PodUID         types.UID
	Container      string
	Result         podsync.ProbeResult
	Duration       time.Duration // from the start of the worker's turn
	Stopped        bool          // the worker ended: forget its series
}

// WithOnProbe adds f to the listeners called (from a worker goroutine)
// after each probe that produced a result (an errored probe produces
// none, as kubelet's), and once when a worker ends.
func WithOnProbe(f func(ProbeRun)) Option {
	return func(m *Manager) { m.onProbe = append(m.onProbe, f) }
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
	onProbe  []func(ProbeRun)
	http     *http.Client
	log      logr.Logger
	start    time.Time // when the Manager was made, as kubelet's start

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	workers map[key]*worker
	stopped map[key]string                          // workers that stopped by themselves: the container ID they stopped on
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
		workers: map[key]*worker{}, stopped: map[key]string{},
		results: map[Kind]map[string]podsync.ProbeResult{Liveness: {}, Readiness: {}, Startup: {}}}
	for _, o := range opts {
		o(m)
	}
	if m.http == nil {
		m.http = defaultHTTPClient()
	}
	m.start = m.clock.Now()
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
// starting a worker for each probe the spec has (kubelet's AddPod, which
// kubelet calls at each sync, and the status its workers read). A worker
// that stopped by itself (its container terminated for good, the pod
// finished or is being deleted) is made again only for a new container
// instance; kubelet makes it again at each sync, where it stops at once.
func (m *Manager) Update(pod *corev1.Pod, status corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	pod = pod.DeepCopy()
	ensure := func(c *corev1.Container) {
		for _, p := range [...]struct {
			kind Kind
			spec *corev1.Probe
		}{{Startup, c.StartupProbe}, {Readiness, c.ReadinessProbe}, {Liveness, c.LivenessProbe}} {
			if p.spec == nil {
				continue
			}
			k := key{pod.UID, c.Name, p.kind}
			if w := m.workers[k]; w != nil {
				w.update(pod, status)
				continue
			}
			if id, ok := m.stopped[k]; ok && id == currentID(&status, c.Name) {
				continue
			}
			delete(m.stopped, k)
			w := newWorker(m, k, *c.DeepCopy(), p.spec.DeepCopy())
			w.update(pod, status) // before its first probe
			m.workers[k] = w
			m.wg.Add(1)
			go w.run()
		}
	}
	for i := range pod.Spec.Containers {
		ensure(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if podsync.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			ensure(&pod.Spec.InitContainers[i])
		}
	}
}

func currentID(status *corev1.PodStatus, name string) string {
	c := findStatus(status.ContainerStatuses, name)
	if c == nil || c.ContainerID == "" {
		c = findStatus(status.InitContainerStatuses, name)
	}
	if c == nil {
		return ""
	}
	return rawID(c.ContainerID)
}

// AddListener adds a function called, like WithOnChange's, when a
// container's result changes (a pod worker wakes the pod).
func (m *Manager) AddListener(f func(podUID types.UID)) {
	m.mu.Lock()
	m.onChange = append(m.onChange[:len(m.onChange):len(m.onChange)], f)
	m.mu.Unlock()
}

// RemovePod stops a pod's workers and forgets their results (kubelet's
// RemovePod). The results are gone when it returns, and a probe still
// running records nothing; the workers end in the background (Close waits
// for them).
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	var stop []*worker
	for k, w := range m.workers {
		if k.uid == uid {
			stop = append(stop, w)
			delete(m.workers, k)
			if w.resultID != "" {
				delete(m.results[k.kind], w.resultID)
			}
		}
	}
	for k := range m.stopped {
		if k.uid == uid {
			delete(m.stopped, k)
		}
	}
	m.mu.Unlock()
	for _, w := range stop {
		w.cancel()
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

// set records a worker's result, unless the worker was removed, and tells
// the listeners when it changed.
func (m *Manager) set(w *worker, id string, r podsync.ProbeResult) {
	m.mu.Lock()
	if m.workers[w.key] != w {
		m.mu.Unlock()
		return
	}
	prev, ok := m.results[w.key.kind][id]
	m.results[w.key.kind][id] = r
	w.resultID = id
	listeners := m.onChange
	m.mu.Unlock()
	if !ok || prev != r {
		for _, f := range listeners {
			f(w.key.uid)
		}
	}
}

// remove forgets a worker's result for an old container.
func (m *Manager) remove(w *worker, id string) {
	m.mu.Lock()
	if m.workers[w.key] == w {
		delete(m.results[w.key.kind], id)
		if w.resultID == id {
			w.resultID = ""
		}
	}
	m.mu.Unlock()
}

// exited is a worker's clean up, as kubelet's: its result and its place
// go; a worker that stopped by itself is remembered (see Update).
func (m *Manager) exited(w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.key] != w {
		return // removed: RemovePod cleaned up
	}
	if w.resultID != "" {
		delete(m.results[w.key.kind], w.resultID)
	}
	delete(m.workers, w.key)
	if w.ctx.Err() == nil {
		m.stopped[w.key] = w.containerID
	}
}

func rawID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}

type nopRecorder struct{}

func (nopRecorder) Eventf(apiruntime.Object, string, string, string, ...interface{}) {}
